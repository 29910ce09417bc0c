"""Where the console looks: the configured Redis connections and their namespaces (a ``Place``)."""
