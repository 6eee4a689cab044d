"""Pure rules of the tutor: no files, no processes, no views."""
