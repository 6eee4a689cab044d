"""The tutor's widgets, one per module."""
