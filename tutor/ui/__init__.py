"""The Textual face of the tutor: ``build_app`` for tests, ``run_app`` for the CLI.

Only this package imports Textual; nothing here imports torch (the runner's
worker process does).
"""
