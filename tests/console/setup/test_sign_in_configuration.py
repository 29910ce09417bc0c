"""Sign-in's settings checked at start (docs/sign-in.md): a bad one is one line naming it,
and nothing starts (RSMQ_SSO_GROUPS that is not JSON: test_configuration.py, through
manage.py check)."""

from __future__ import annotations

import ipaddress

import pytest

from dashboard.serving.checks import problems


@pytest.fixture
def found(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"

    def check(**values: object) -> list[str]:
        for name, value in values.items():
            setattr(settings, name, value)
        return problems()

    return check


def test_a_provider_and_its_groups_are_fine(found) -> None:
    assert found(RSMQ_OIDC_ISSUER="https://login.example.com/realms/ops",
                 RSMQ_OIDC_CLIENT_ID="rsmq", RSMQ_SSO_GROUPS={"ops": ["admin"], "b": "billing"},
                 RSMQ_LOCAL_LOGIN=False) == []  # fmt: skip


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ({"RSMQ_SSO_GROUPS": ["admin"]}, "RSMQ_SSO_GROUPS must be a JSON object like"),
        ({"RSMQ_SSO_GROUPS": {"ops": [1]}},
         "RSMQ_SSO_GROUPS['ops'] must be a list of Django group names, like [\"admin\"]"
         " (it is [1])"),
        ({"RSMQ_OIDC_RECHECK_SECONDS": "5m"},
         "RSMQ_OIDC_RECHECK_SECONDS is '5m': it must be a number of seconds more than 0"
         " up to 86400"),
        ({"RSMQ_OIDC_ISSUER": "https://login.example.com"},
         "RSMQ_OIDC_ISSUER and RSMQ_OIDC_CLIENT_ID go together: set both, or neither"),
        ({"RSMQ_OIDC_ISSUER": "login.example.com", "RSMQ_OIDC_CLIENT_ID": "rsmq"},
         "RSMQ_OIDC_ISSUER must be the provider's https:// URL (it is 'login.example.com')"),
        ({"RSMQ_OIDC_ISSUER": "https://l.example.com", "RSMQ_OIDC_CLIENT_ID": "rsmq",
          "RSMQ_OIDC_SCOPES": ["email"]}, "RSMQ_OIDC_SCOPES must include openid"),
        ({"RSMQ_PROXY_USER_HEADER": "X-Forwarded-User", "RSMQ_TRUSTED_PROXIES": []},
         "RSMQ_PROXY_USER_HEADER (X-Forwarded-User) is believed only from RSMQ_TRUSTED_PROXIES"),
        ({"RSMQ_PROXY_GROUPS_HEADER": "X-Forwarded-Groups"},
         "RSMQ_PROXY_GROUPS_HEADER needs RSMQ_PROXY_USER_HEADER"),
        ({"RSMQ_LOCAL_LOGIN": False},
         "RSMQ_LOCAL_LOGIN is off with no other way in: set RSMQ_OIDC_ISSUER,"
         " RSMQ_PROXY_USER_HEADER or RSMQ_BREAK_GLASS_USERS"),
    ],
)  # fmt: skip
def test_a_bad_setting_is_named(found, values: dict[str, object], line: str) -> None:
    (reported,) = found(**values)
    assert reported.startswith(line)


def test_a_proxy_header_with_a_trusted_proxy_is_fine(found) -> None:
    assert found(RSMQ_PROXY_USER_HEADER="X-Forwarded-User",
                 RSMQ_TRUSTED_PROXIES=[ipaddress.ip_network("10.0.0.0/8")]) == []  # fmt: skip
