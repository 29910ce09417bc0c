"""Single sign-on with OpenID Connect, through authlib's Django client: the authorization
code flow with PKCE (S256) and a nonce, the ID token checked against the provider's keys.
The user is made at the first sign-in; their Django groups follow the provider's groups
claim (dashboard/access/groups.py). Every RSMQ_OIDC_RECHECK_SECONDS a signed-in session
asks the provider again (``Recheck``: a refresh token's grant, or userinfo without one),
on whatever request comes — a page, an htmx fragment, the JSON API: a group taken
away takes its roles with it, and a session the provider ended is logged out."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.django_client import OAuth, OAuthError
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, login, logout
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django_htmx.http import HttpResponseClientRedirect
from joserfc.errors import JoseError

from dashboard.access import groups, local, sign_ins
from dashboard.models import SsoIdentity, SsoSession

log = logging.getLogger(__name__)

#: the session's backend (BACKEND_SESSION_KEY) of a single sign-on
PATH = "dashboard.access.oidc.OidcUsers"
#: the session's time of its last check with the provider (epoch s)
CHECKED = "rsmq_sso_checked"
#: why the request's session was ended (a request attribute: the answer to htmx reads it)
ENDED = "rsmq_session_ended"


class OidcUsers(ModelBackend):
    """The backend a single sign-on's session names: it authenticates nobody itself (users
    come in through the provider's callback, ``finish``) and reads the session's user back
    as Django's does."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None,
        password: str | None = None, **kwargs: Any,
    ) -> User | None:  # fmt: skip
        return None


class SignInFailed(Exception):
    """The provider's answer can't sign anyone in: the login page says why (``status``)."""

    def __init__(self, text: str, status: int = 403, who: str = "") -> None:
        super().__init__(text)
        self.status, self.who = status, who


def configured() -> bool:
    return bool(settings.RSMQ_OIDC_ISSUER and settings.RSMQ_OIDC_CLIENT_ID)


_clients: dict[tuple[Any, ...], Any] = {}


def client() -> Any:
    """authlib's client of the configured provider, one per configuration: it keeps the
    provider's discovery document and keys once read."""
    key = (settings.RSMQ_OIDC_ISSUER, settings.RSMQ_OIDC_CLIENT_ID,
           settings.RSMQ_OIDC_CLIENT_SECRET, tuple(settings.RSMQ_OIDC_SCOPES),
           settings.RSMQ_OIDC_TIMEOUT)  # fmt: skip
    if key not in _clients:
        secret = settings.RSMQ_OIDC_CLIENT_SECRET or None
        _clients[key] = OAuth().register(
            name="oidc",
            client_id=settings.RSMQ_OIDC_CLIENT_ID,
            client_secret=secret,
            server_metadata_url=f"{settings.RSMQ_OIDC_ISSUER}/.well-known/openid-configuration",
            client_kwargs={
                "scope": " ".join(settings.RSMQ_OIDC_SCOPES),
                "code_challenge_method": "S256",
                # No secret: a public client, which PKCE alone protects.
                "token_endpoint_auth_method": "client_secret_basic" if secret else "none",
                "default_timeout": float(settings.RSMQ_OIDC_TIMEOUT),
            },
        )
    return _clients[key]


def begin(request: HttpRequest, redirect_uri: str) -> HttpResponse:
    """To the provider's sign-in; it comes back to ``redirect_uri`` (``finish``)."""
    try:
        response: HttpResponse = client().authorize_redirect(request, redirect_uri)
    except (requests.RequestException, ValueError, RuntimeError) as e:
        raise SignInFailed(f"The sign-in provider could not be reached: {e}", 502) from e
    return response


def finish(request: HttpRequest) -> User:
    """The provider's answer (its callback): the user it names, signed in, their groups
    synced; else SignInFailed."""
    app = client()
    try:
        token = app.authorize_access_token(request)
        claims = dict(token.get("userinfo") or {})
        if not claims:
            raise SignInFailed(
                "The provider sent no ID token (is 'openid' among RSMQ_OIDC_SCOPES?)"
            )
        claims = _with_userinfo(app, token, claims)
    except OAuthError as e:
        raise SignInFailed(f"The provider refused the sign-in: {e.error or e}", 403) from e
    except requests.RequestException as e:
        raise SignInFailed(f"The sign-in provider could not be reached: {e}", 502) from e
    except (AuthlibBaseError, JoseError) as e:  # an ID token that does not check out
        raise SignInFailed(f"The provider's ID token was refused: {e}", 403) from e
    user = _user(claims)
    groups.sync(user, groups.claimed_groups(claims.get(settings.RSMQ_OIDC_GROUPS_CLAIM)), "oidc")
    login(request, user, backend=PATH)
    sign_ins.signed_in(request, user, "oidc")
    _prune()
    key = request.session.session_key
    assert key is not None  # login() made the session
    SsoSession.objects.create(
        session_key=key, user=user,
        access_token=token.get("access_token", ""), refresh_token=token.get("refresh_token") or "",
        expires_at=token.get("expires_at"),
    )  # fmt: skip
    request.session[CHECKED] = time.time()
    return user


def _with_userinfo(app: Any, token: Any, claims: dict[str, Any]) -> dict[str, Any]:
    """The ID token's ``claims``, and the userinfo endpoint's when they carry no groups
    claim (some providers put the groups in one of the two only)."""
    if settings.RSMQ_OIDC_GROUPS_CLAIM in claims:
        return claims
    if not app.load_server_metadata().get("userinfo_endpoint"):
        return claims
    return {**claims, **app.userinfo(token=token)}


def _user(claims: dict[str, Any]) -> User:
    """The console user the provider's account is: the one it signed in as before (its
    ``sub``), else the one its user name names — made now, or linked if nobody from the
    provider has it and it has no password."""
    issuer, subject = settings.RSMQ_OIDC_ISSUER, str(claims.get("sub") or "")
    if not subject:
        raise SignInFailed("The provider's ID token has no 'sub'.")
    known = SsoIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject)
    user = known[0].user if known else _named(claims)
    if not user.is_active:
        raise SignInFailed(f"{user.get_username()!r} is deactivated in the console.",
                           who=user.get_username())  # fmt: skip
    if not known:
        SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    return user


def _named(claims: dict[str, Any]) -> User:
    name = claims.get(settings.RSMQ_OIDC_USERNAME_CLAIM) or claims.get("sub")
    if not isinstance(name, str) or not name:
        raise SignInFailed(
            f"The provider's answer has no {settings.RSMQ_OIDC_USERNAME_CLAIM!r} claim"
            " (RSMQ_OIDC_USERNAME_CLAIM)."
        )
    longest = User._meta.get_field("username").max_length or 150
    if len(name) > longest:
        raise SignInFailed(f"The user name {name[:40]!r}… is longer than {longest} characters.")
    user, created = User.objects.get_or_create(username=name)
    if created:
        email = claims.get("email")
        user.email = email if isinstance(email, str) and len(email) <= 254 else ""
        user.set_unusable_password()
        user.save()
    elif user.has_usable_password():
        # A console user with a password (the break-glass admin): the provider can't take
        # their name, whoever it lets call themselves that.
        raise SignInFailed(
            f"{name!r} is a console user with a password: they log in with it.", who=name
        )
    elif SsoIdentity.objects.filter(user=user).exists():
        # Another account at the provider signed in as this name first (a name reused).
        raise SignInFailed(
            f"{name!r} is the console user of another account at the provider.", who=name
        )
    return user


def _prune() -> None:
    """Forget the sessions unused for longer than a session lives (their cookie expired)."""
    since = timezone.now() - dt.timedelta(seconds=settings.SESSION_COOKIE_AGE)
    SsoSession.objects.filter(checked_at__lt=since).delete()


def forget(request: HttpRequest) -> None:
    """The session's tokens, when it logs out."""
    SsoSession.objects.filter(session_key=request.session.session_key).delete()


def end(request: HttpRequest, why: str) -> None:
    """Log the request's session out, audited as ended (``why``)."""
    sign_ins.ended(request.user, why)  # type: ignore[arg-type]
    setattr(request, ENDED, why)
    logout(request)


class Ended(Exception):
    """The provider says the session is over (its text: why)."""


class Unreachable(Exception):
    """The provider did not answer (its text: why)."""


def _claims(row: SsoSession) -> dict[str, Any]:
    """The user's claims now: the refresh token's grant (the provider says whether the
    session lives on; its new ID token, checked, or its userinfo), or without a refresh
    token the userinfo endpoint while the access token lasts. Ended, Unreachable."""
    app = client()
    try:
        if row.refresh_token:
            try:
                token = app.fetch_access_token(
                    grant_type="refresh_token", refresh_token=row.refresh_token
                )
                claims = dict(app.parse_id_token(token, None) or {}) if "id_token" in token else {}
            except OAuthError as e:
                raise Ended(f"the provider refused to refresh the session ({e.error or e})") from e
            except (AuthlibBaseError, JoseError) as e:
                raise Ended(f"the provider's new ID token was refused ({e})") from e
            row.access_token = token["access_token"]
            row.refresh_token = token.get("refresh_token") or row.refresh_token
            row.expires_at = token.get("expires_at")
            return _with_userinfo(app, token, claims)
        if row.expires_at is not None and row.expires_at <= time.time():
            raise Ended("its access token expired, and the provider gave no refresh token")
        return _with_userinfo(app, {"access_token": row.access_token, "token_type": "Bearer"}, {})
    except requests.HTTPError as e:
        if e.response is not None and e.response.status_code in (400, 401, 403):
            raise Ended(f"the provider refused its access token ({e.response.status_code})") from e
        raise Unreachable(str(e)) from e
    except requests.RequestException as e:
        raise Unreachable(str(e)) from e


def recheck(request: HttpRequest) -> None:
    """Ask the provider about the request's session again, if its last check is older
    than RSMQ_OIDC_RECHECK_SECONDS: its groups synced, or the session ended. One request
    of a session asks at a time (it claims the check by moving ``checked_at``, the others
    see the claim and go on), and no database transaction is held while the provider
    answers: a lock for as long as it takes would hold every other writer (SQLite's lock is
    the whole file)."""
    every = float(settings.RSMQ_OIDC_RECHECK_SECONDS)
    now = time.time()
    if now - float(request.session.get(CHECKED, 0)) < every:
        return
    user = request.user
    assert isinstance(user, User)
    row = SsoSession.objects.filter(session_key=request.session.session_key).first()
    if row is None:
        end(request, "Its single sign-on session is no longer known.")
        return
    last = row.checked_at  # the last check the provider answered
    if now - last.timestamp() < every:  # another request just asked
        request.session[CHECKED] = last.timestamp()
        return
    claimed = timezone.now()
    if not SsoSession.objects.filter(pk=row.pk, checked_at=last).update(checked_at=claimed):
        return  # another request of the session is asking right now
    try:
        claims = _claims(row)
    except Ended as e:
        row.delete()
        end(request, f"The provider ended the session: {e}.")
        return
    except Unreachable as e:
        # A blip does not log everyone out; a provider gone for two checks does.
        if now - last.timestamp() >= 2 * every:
            row.delete()
            end(request, f"The provider could not be reached for two checks: {e}.")
        else:
            log.warning("The sign-in provider could not be reached: %s", e)
            SsoSession.objects.filter(pk=row.pk, checked_at=claimed).update(checked_at=last)
            request.session[CHECKED] = now
        return
    subject = claims.get("sub")
    if (
        subject is not None
        and not SsoIdentity.objects.filter(user=user, subject=str(subject)).exists()
    ):
        # A refreshed ID token names the account the session began with, or none.
        row.delete()
        end(request, "The provider's new ID token names another account.")
        return
    row.checked_at = timezone.now()
    row.save()  # the tokens the refresh rotated, with the time of this answer
    groups.sync(user, groups.claimed_groups(claims.get(settings.RSMQ_OIDC_GROUPS_CLAIM)), "oidc")
    request.session[CHECKED] = now


class Recheck:
    """Every signed-in request: a single sign-on session checked with the provider when
    its time came (``recheck``); a password session ended once passwords are off
    (RSMQ_LOCAL_LOGIN), but for the break-glass users. An htmx request whose session ended
    is sent to the login page (a redirect would be swapped into the page)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.SESSION_COOKIE_NAME not in request.COOKIES:
            # No session: nothing to check, and the session untouched (an API token's
            # call answers without Vary: Cookie).
            return self.get_response(request)
        backend = request.session.get(BACKEND_SESSION_KEY)
        if backend == PATH and request.user.is_authenticated:
            recheck(request)
        elif backend == local.PATH and not local.allowed(request.user.get_username()):
            end(request, "Password logins are off (RSMQ_LOCAL_LOGIN).")
        htmx = getattr(request, "htmx", None)
        if hasattr(request, ENDED) and htmx:
            back = urlencode({"next": htmx.current_url_abs_path or "/"})
            return HttpResponseClientRedirect(f"{reverse('login')}?{back}")
        return self.get_response(request)
