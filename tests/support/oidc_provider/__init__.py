"""A real OpenID Connect provider for the single sign-on tests, in a process of its own:
django-oauth-toolkit in a tiny Django project (its own settings, SQLite, an RS256 key made
at start), PKCE required, a ``groups`` claim from the user's Django groups there. Started
and driven by tests/support/oidc.py."""
