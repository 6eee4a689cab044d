#!/usr/bin/env bash
# Mutation testing with mutmut: do the tests fail when the code is wrong?
#
# mutmut changes one thing at a time in a source file (a < for a <=, a constant,
# a dropped call...) and runs the tests that reach the changed function; a
# mutant that no test notices "survives". Not part of CI: a file takes minutes.
#
# Usage (from anywhere; needs the mutation extra: pip install -e '.[test,mutation]'):
#   scripts/mutation.sh                       the four files below, one after another
#   scripts/mutation.sh tutor/model/answers/kinds.py  one file
#   scripts/mutation.sh tutor/instructor     a folder's files in one mutmut run (one pass
#                                             to map tests to functions, the tests of every
#                                             file of it), scored file by file
# Environment:
#   PYTHON            the interpreter with mutmut installed (default: .venv/bin/python)
#   MUTATION_CHILDREN mutants tested at once (default 1: the machine is shared)
#   MUTATION_KEEP=1   keep the scratch copies to inspect survivors there with
#                     `mutmut results` and `mutmut show NAME`
#   MUTATION_REV=REV  mutate a commit (git archive REV) instead of the working
#                     tree, e.g. to score the tests as they were before a change
#
# Each file is mutated in a scratch copy of the checkout (under $TMPDIR), so the
# worktree never gets a mutants/ folder. Only that file is mutated, and only its
# own test files run (tests_for below, which may add pytest options such as
# --deselect), with the default pytest options (-m 'not slow'), at nice 19.
# The last line per file reads "FILE: killed K of N (P %), survived S,
# no tests T, timeout O, detected D %" (detected: killed or timed out, i.e. the
# tests noticed); a summary of all files follows. A mutant is killed when a
# selected test fails; "no tests" means no selected test reaches that function.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
children=${MUTATION_CHILDREN:-1}
mutmut="$(dirname "$python")/mutmut"

tests_for() {
    case "$1" in
        tutor/model/answers/*.py|tutor/model/grading.py)
            echo tests/test_answers.py tests/test_answer_range.py tests/test_answer_lists.py tests/test_answer_rules.py \
                tests/test_result.py tests/test_verdict.py tests/test_mutants_rules.py ;;
        tutor/model/errors.py) echo tests/test_errors.py ;;
        tutor/model/catalog.py)
            echo tests/test_catalog_rules.py tests/test_faults_and_catalog.py tests/test_catalog_cache.py tests/test_fuzz_loaders.py \
                tests/test_mutants_rules.py ;;
        tutor/model/review.py) echo tests/test_review.py ;;
        tutor/model/finding.py) echo tests/test_finding.py ;;
        tutor/model/calibration.py)
            echo tests/test_attempts.py tests/test_mutants_rules.py tests/test_learner_ux.py ;;
        # the class's pure pieces: their own tests, which call them in this process (seconds a mutant, where the
        # whole grading's tests below take a minute for a mutant they all reach)
        tutor/instructor/memo.py) echo tests/test_grade_units.py tests/test_mutants_rules.py tests/test_grade.py ;;
        tutor/instructor/shard.py) echo tests/test_grade_units.py tests/test_grade_batch.py ;;
        tutor/instructor/saving.py) echo tests/test_grade_units.py tests/test_mutants_rules.py tests/test_grade.py ;;
        tutor/instructor/columns.py) echo tests/test_grade_units.py tests/test_grade_course.py ;;
        tutor/instructor/wide.py) echo tests/test_grade_units.py tests/test_grade_lms.py ;;
        tutor/instructor/json_items.py) echo tests/test_grade_units.py tests/test_grade_json_items.py ;;
        tutor/instructor/gradebook.py)
            echo tests/test_grade_units.py tests/test_grade_outputs.py tests/test_grade_golden.py tests/test_grade_batch.py \
                tests/test_grade_course.py ;;
        tutor/instructor/results.py)
            echo tests/test_grade_units.py tests/test_grade_outputs.py tests/test_grade_golden.py tests/test_grade_batch.py ;;
        tutor/instructor/tail.py) echo tests/test_grade_units.py tests/test_grade_golden.py ;;
        tutor/instructor/answer_rows.py)
            echo tests/test_grade_units.py tests/test_grade_outputs.py tests/test_grade_lms.py tests/test_mutants_rules.py \
                tests/test_grade.py tests/test_grade_edges.py ;;
        tutor/instructor/assignment.py)
            echo tests/test_grade_units.py tests/test_grade_batch.py tests/test_grade_lms.py tests/test_grade_course.py ;;
        tutor/instructor/out_folder.py) echo tests/test_grade_units.py tests/test_grade_outputs.py tests/test_grade_course.py ;;
        tutor/instructor/grade.py)
            echo tests/test_grade_units.py tests/test_grade.py tests/test_grade_edges.py tests/test_mutants_rules.py ;;
        tutor/instructor/course.py)
            echo tests/test_grade_units.py tests/test_grade_course.py tests/test_grade_lms.py tests/test_grade_outputs.py \
                tests/test_grade_golden.py tests/test_grade.py ;;
        tutor/instructor/fixes.py) echo tests/test_grade_units.py tests/test_fixes_run.py tests/test_grade_batch.py ;;
        tutor/instructor/gradescope.py)
            echo tests/test_grade_units.py tests/test_grade_batch.py tests/test_grade_json_items.py \
                tests/hostile/test_grading_submissions.py ;;
        tutor/instructor/report.py) echo tests/test_report_units.py tests/test_report.py tests/test_grade_course.py tests/test_grade_batch.py ;;
        # the class's grading: the use case, its outputs and the command lines that drive it. A `python -m
        # tutor.cli` child runs the mutant too (tests/conftest.py lets it start under mutmut)
        tutor/instructor/*.py)
            echo tests/test_grade.py tests/test_grade_batch.py tests/test_grade_course.py tests/test_grade_edges.py \
                tests/test_grade_golden.py tests/test_grade_json_items.py tests/test_grade_lms.py tests/test_grade_memory.py \
                tests/test_grade_outputs.py tests/test_report.py tests/test_mutants_rules.py \
                tests/hostile/test_grading_submissions.py tests/hostile/test_grading_wiring.py ;;
        tutor/store/progress.py|tutor/store/names.py|tutor/store/migration.py|tutor/model/attempts.py)
            echo tests/test_progress.py tests/test_fuzz_loaders.py tests/test_attempts.py tests/test_mutants_rules.py ;;
        tutor/model/patch.py) echo tests/test_patch_rules.py tests/test_edit.py tests/test_verdict.py ;;
        tutor/model/verdict.py|tutor/app/tasks.py)
            echo tests/test_verdict.py tests/test_edit.py tests/test_evidence_and_sampling.py tests/test_edit_run.py ;;
        engine/model.py) echo tests/test_engine.py tests/test_kv_cache.py tests/test_mutants_model.py ;;
        # test_runner.py drives the Runner with a stand-in worker; the others start real workers (seconds
        # each): only those that drive the worker and the Runner's limits, retries and cancellation. Left out: the tests that run `python -m tutor.cli` on a
        # copied checkout in a subprocess. That child imports mutmut's rewritten runner.py and, outside
        # mutmut's folder, cannot read its config, so it crashes and mutmut refuses to start.
        tutor/sandbox/runner.py)
            echo tests/test_runner.py tests/test_runner_safety.py tests/test_timeouts.py \
                --deselect=tests/test_runner_safety.py::test_tutor_check_leaves_the_tree_and_progress_untouched \
                --deselect=tests/test_timeouts.py::test_run_times_out_says_how_to_retry_and_the_retry_passes \
                --deselect=tests/test_timeouts.py::test_the_environment_variable_scales_the_limit_for_a_grader \
                --deselect=tests/test_timeouts.py::test_check_in_two_workers_keeps_the_order_and_reports_the_wall_time
            ;;
        # the pure grading of a worker's answer; left out, as for runner.py, the tests whose subprocesses import it
        tutor/sandbox/result.py)
            echo tests/test_result.py tests/test_verdict.py tests/test_runner.py tests/test_session.py tests/test_edit.py \
                --deselect=tests/test_edit.py::test_the_working_copy_survives_a_sigkill_mid_save \
                --deselect=tests/test_edit.py::test_edit_mode_domain_imports_neither_torch_nor_textual
            ;;
        # the signed pipe and the messages: their round trips and what verify accepts, in this process. Left out:
        # test_runner.py, whose stand-in worker waits out its timeout on a broken wire (minutes a mutant), and the
        # tests that start real workers (seconds each)
        tutor/sandbox/protocol.py) echo tests/test_protocol_wire.py tests/test_mutants_trust.py tests/test_result.py ;;
        # the read policy, the audit hook's sentences, the probe's decision and plumbing, the status on the wire.
        # Left out: test_sandbox_layers.py, whose probe forks this machine's layers (a minute a mutant); the
        # probe's child body, which only runs in that fork, is marked no mutate
        tutor/sandbox/confine.py)
            echo tests/test_confine_attempts.py tests/test_confine_probe.py tests/test_mutants_trust.py ;;
        *) echo "scripts/mutation.sh: no tests are chosen for $1; add a line for it to tests_for" >&2
           return 2 ;;
    esac
}

[ -x "$mutmut" ] || { echo "scripts/mutation.sh: $mutmut not found; pip install -e '.[test,mutation]'" >&2; exit 2; }
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tutor/model/answers/kinds.py tutor/model/answers/lists.py tutor/store/progress.py engine/model.py tutor/sandbox/runner.py)
summary=()
for file in "${files[@]}"; do
    file=${file%/}
    if [ -d "$root/$file" ]; then  # every file's tests, once each (a package's __init__.py has none of its own)
        glob="$file/*"
        selection=""
        for py in $(git -C "$root" ls-files "$file" | grep '\.py$' | grep -v '/__init__\.py$'); do
            selection="$selection $(tests_for "$py")" || exit 2
        done
        selection=$(printf '%s\n' $selection | awk '!seen[$0]++')
    elif [ -f "$root/$file" ]; then
        glob="$file"
        selection=$(tests_for "$file") || exit 2
    else echo "scripts/mutation.sh: $file is neither a file nor a folder of this checkout" >&2; exit 2
    fi
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/mutation.XXXXXX")
    if [ -n "${MUTATION_REV:-}" ]; then
        git -C "$root" archive "$MUTATION_REV" | tar -C "$scratch" -xf -
    else  # the checkout as git sees it: tracked and new files, nothing ignored
        (cd "$root" && git ls-files -z --cached --others --exclude-standard \
            | xargs -0 -I{} sh -c '[ -e "{}" ] && printf "%s\0" "{}"' \
            | tar --null -T - -cf -) | tar -C "$scratch" -xf -
    fi
    tests=""  # a TOML list of the selected test files that this copy has, and pytest options (-...) as given
    for t in $selection; do
        case "$t" in
            -*) tests="${tests:+$tests, }\"$t\"" ;;
            *) [ -f "$scratch/$t" ] && tests="${tests:+$tests, }\"$t\"" ;;
        esac
    done
    cat >> "$scratch/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["engine", "exercises", "tutor"]
# mutmut runs the tests in its own copy (mutants/), which holds the source paths and tests/ only: data the
# tests read from the checkout is copied too
also_copy = ["progress", "docs", "README.md"]
only_mutate = ["$glob"]
pytest_add_cli_args_test_selection = [$tests]
# torch in the tests is not fork-safe from a process that already ran them
process_isolation = "forkserver"
use_git_change_detection = false
# mutmut runs pytest in its own process and reads which tests reach a mutant there: no xdist workers
pytest_add_cli_args = ["-n", "0"]
EOF
    echo "== $file: mutating in $scratch, tests: $tests"
    (cd "$scratch" && nice -n 19 "$mutmut" run --max-children "$children" > mutmut.log 2>&1) \
        || { tail -20 "$scratch/mutmut.log"; echo "scripts/mutation.sh: mutmut failed on $file; see $scratch/mutmut.log" >&2; exit 1; }
    (cd "$scratch" && "$mutmut" export-cicd-stats > /dev/null && "$mutmut" results > survivors.txt)
    line=$("$python" - "$scratch/mutants/mutmut-cicd-stats.json" "$file" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
total = max(s["total"], 1)
print(f"{sys.argv[2]}: killed {s['killed']} of {s['total']} ({100 * s['killed'] / total:.1f} %), "
      f"survived {s['survived']}, no tests {s['no_tests']}, timeout {s['timeout']}, "
      f"detected {100 * (s['killed'] + s['timeout']) / total:.1f} %")
EOF
)
    echo "$line"
    if [ -d "$root/$file" ]; then  # the same line for each module of the folder
        (cd "$scratch" && "$mutmut" results --all true > all.txt)
        "$python" - "$scratch/all.txt" <<'EOF'
import collections, sys
counts = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    name, _, status = line.strip().rpartition(": ")
    if "__mutmut_" in name:  # module.function__mutmut_N, a method's function being xǁClassǁname
        counts[name.split("__mutmut_")[0].rsplit(".", 1)[0]][status] += 1
for module, c in sorted(counts.items()):
    total = sum(c.values())
    print(f"  {module}: killed {c['killed']} of {total} ({100 * c['killed'] / total:.1f} %), survived {c['survived']}, "
          f"no tests {c['no tests']}, timeout {c['timeout']}, detected {100 * (c['killed'] + c['timeout']) / total:.1f} %")
EOF
    fi
    sed 's/^/    /' "$scratch/survivors.txt"
    summary+=("$line")
    if [ "${MUTATION_KEEP:-0}" = 1 ]; then echo "   kept: $scratch"; else rm -rf "$scratch"; fi
done
echo "== summary"
printf '%s\n' "${summary[@]}"
