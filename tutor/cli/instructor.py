"""The instructor's commands: ``tutor grade`` and ``tutor report`` (the work is :mod:`tutor.instructor`)."""

from __future__ import annotations

from tutor.cli.replies import Events, GradeReply, ReportReply


def grade(args, events: Events) -> GradeReply:
    """``tutor grade --answers FILE``: see :mod:`tutor.instructor.grade`."""
    from tutor.instructor import grade as grading
    return grading.command(args, events)


def report(args, events: Events) -> ReportReply:
    """``tutor report DIR``: see :mod:`tutor.instructor.report`."""
    from tutor.instructor import report as reporting
    return reporting.command(args, events)
