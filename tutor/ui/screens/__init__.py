"""The tutor's screens, one per module."""
