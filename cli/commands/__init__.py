"""Click command modules (one module a family of commands), registered in `cli.main`."""
