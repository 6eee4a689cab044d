"""The instructor's work: grading a class's answers and reporting a class's progress (data in, data out)."""
