"""Running code we did not write: the runner, its worker process, their protocol, and the machine's speed."""
