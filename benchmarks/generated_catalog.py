"""A catalog of any size for the startup benchmark: the shipped sets, then copies of their exercises.

    python benchmarks/generated_catalog.py 1000 /tmp/big      # prints the folder to set TUTOR_CATALOG_DIR to

The folder it makes is a source root of its own: ``exercises/`` holds the
shipped set files and the generated ones, with links to the shipped check
modules and snippets; ``engine`` links to the shipped engine, so every check
and fault the copies name validates as the originals do. Each copy is an
original exercise under a new id (``<id>-<n>``) in a generated set of 40;
its text, check and fault are the original's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tomli_w

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
SET_SIZE = 40


def generate(total: int, folder: Path) -> Path:
    """Make a catalog of ``total`` exercises (at least the shipped ones) under ``folder``.

    Returns:
        the set-file folder (``folder / "exercises"``), for ``TUTOR_CATALOG_DIR``.
    """
    shipped = ROOT / "exercises"
    directory = folder / "exercises"
    directory.mkdir(parents=True, exist_ok=True)
    if not (folder / "engine").exists():
        (folder / "engine").symlink_to(ROOT / "engine", target_is_directory=True)
    for path in shipped.iterdir():
        target = directory / path.name
        if path.suffix == ".toml":
            target.write_bytes(path.read_bytes())
        elif (path.suffix == ".py" or path.is_dir()) and not target.exists():
            target.symlink_to(path, target_is_directory=path.is_dir())
    originals = []
    for path in sorted(shipped.glob("*.toml")):
        originals += tomllib.loads(path.read_text(encoding="utf-8")).get("exercise", [])
    extra = max(0, total - len(originals))
    for number in range((extra + SET_SIZE - 1) // SET_SIZE):
        set_id = f"generated-{number + 1:03d}"
        exercises = []
        for k in range(number * SET_SIZE, min(extra, (number + 1) * SET_SIZE)):
            original = originals[k % len(originals)]
            exercises.append({**original, "id": f"{original['id']}-{k + 1}", "set": set_id})
        data = {"format_version": 1,
                "set": {"id": set_id, "title": f"Generated {number + 1}", "order": 1000 + number,
                        "summary": "copies of shipped exercises, for the startup benchmark"},
                "exercise": exercises}
        (directory / f"{set_id}.toml").write_text(tomli_w.dumps(data), encoding="utf-8")
    return directory


if __name__ == "__main__":
    print(generate(int(sys.argv[1]), Path(sys.argv[2])))
