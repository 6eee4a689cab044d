"""Small subject modules: real code for exercises whose idea does not live in
the engine GPT. Each clean module is the right way to write it; faults edit
a private copy."""
