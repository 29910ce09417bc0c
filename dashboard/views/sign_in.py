"""The login page (a password form, the single sign-on button, or both: docs/sign-in.md),
single sign-on's two legs (to the provider and back), and logging out — each audited."""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from dashboard.access import oidc, sign_ins

#: where single sign-on goes once back (the session's, from the login page's ``next``)
NEXT = "rsmq_sso_next"


class Login(auth_views.LoginView):
    """Django's login view, with what the console's sign-in allows: the password form
    (RSMQ_LOCAL_LOGIN, or ``?break-glass``), the single sign-on button (RSMQ_OIDC_ISSUER)."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        ctx = super().get_context_data(**kwargs)
        sso = oidc.configured()
        ctx.update(
            sso=sso,
            sso_button=settings.RSMQ_OIDC_BUTTON,
            local_login=settings.RSMQ_LOCAL_LOGIN,
            # Without single sign-on the form stays: a break-glass user needs it.
            show_form=settings.RSMQ_LOCAL_LOGIN or not sso or "break-glass" in self.request.GET
            or self.request.method == "POST",
        )  # fmt: skip
        return ctx

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_valid(form)
        sign_ins.signed_in(self.request, form.get_user(), "password")
        return response


class Logout(auth_views.LogoutView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.user.is_authenticated:
            sign_ins.signed_out(request, request.user)
            oidc.forget(request)
        return super().post(request, *args, **kwargs)


def _callback(request: HttpRequest) -> str:
    """The console's address for the provider's answer (RSMQ_CONSOLE_URL's, when set: the
    address the provider was told of, whatever Host a proxy passes on)."""
    path = reverse("login-sso-callback")
    base = settings.RSMQ_CONSOLE_URL
    return (
        urljoin(base.rstrip("/") + "/", path.lstrip("/"))
        if base
        else request.build_absolute_uri(path)
    )


def _failed(request: HttpRequest, e: oidc.SignInFailed) -> HttpResponseBase:
    sign_ins.failed(request, e.who, str(e))
    response = Login.as_view(extra_context={"sso_error": str(e)})(request)
    response.status_code = e.status
    return response


@require_safe
@never_cache
def sso_start(request: HttpRequest) -> HttpResponseBase:
    if not oidc.configured():
        return HttpResponseRedirect(reverse("login"))
    to = request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(to, {request.get_host()}, request.is_secure())
    request.session[NEXT] = to if safe else ""
    try:
        return oidc.begin(request, _callback(request))
    except oidc.SignInFailed as e:
        return _failed(request, e)


@require_safe
@never_cache
def sso_callback(request: HttpRequest) -> HttpResponseBase:
    if not oidc.configured():
        return HttpResponseRedirect(reverse("login"))
    to = request.session.get(NEXT) or settings.LOGIN_REDIRECT_URL
    try:
        oidc.finish(request)
    except oidc.SignInFailed as e:
        return _failed(request, e)
    return HttpResponseRedirect(to)
