"""Grading a class and reporting on it: data in, data out (no command, no view)."""
