"""The console's side of the Spark pipeline: starting its runs and reading their results."""
