"""The provider's settings: everything under PROVIDER_DIR (its database), an RS256 key
made at start, sessions and CSRF under cookie names of their own (the console's on the
same host would be overwritten: cookies ignore ports)."""

from __future__ import annotations

import os
from pathlib import Path

from jwcrypto import jwk

HERE = Path(__file__).resolve().parent
DIR = Path(os.environ.get("PROVIDER_DIR", "/tmp/oidc-provider"))

SECRET_KEY = "test-provider-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "support.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DIR / "provider.sqlite3"}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast, a test's

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": jwk.JWK.generate(kty="RSA", size=2048)
    .export_to_pem(private_key=True, password=None)
    .decode(),
    "PKCE_REQUIRED": True,
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Your name",
        "email": "Your email",
        "groups": "Your groups",
    },
    "OAUTH2_VALIDATOR_CLASS": "support.oidc_provider.validator.Validator",
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(os.environ.get("PROVIDER_ACCESS_TOKEN_SECONDS", "36000")),
}
LOGGING = {"version": 1, "disable_existing_loggers": False}
