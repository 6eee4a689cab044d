"""Use cases shared by the command line, the TUI and the instructor's tools: a learner's session and its runs."""
