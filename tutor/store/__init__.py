"""Where progress lives: the one atomic writer, learner names, the progress store, its format and migration, working copies."""
