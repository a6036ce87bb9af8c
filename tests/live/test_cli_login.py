"""The unmodified official CLI signs in with the device flow and works with a session (spec/PLATFORM_API.md §2–§4)."""

from __future__ import annotations

import base64
import http.cookiejar
import json
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import jwt
import pytest

from tests.support.live import BIN, ROOT, LivePlatform

pytestmark = pytest.mark.live


class Browser:
    """A cookie-keeping HTTP client that signs in through the dashboard's login form (CSRF included)."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def get(self, path: str) -> str:
        return self.opener.open(self.base + path, timeout=30).read().decode()

    def post(self, path: str, data: dict) -> str:
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": self.csrf()}).encode()
        req = urllib.request.Request(self.base + path, data=body, headers={"Referer": self.base + path})
        return self.opener.open(req, timeout=30).read().decode()

    def login(self, username: str, password: str) -> None:
        self.get("/accounts/login/")
        self.post("/accounts/login/", {"username": username, "password": password})


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    # Short-lived access tokens (30 s < the CLI's 60 s margin) force a refresh before every command;
    # a 1 s device-code interval keeps the login quick.
    p = LivePlatform(tmp_path_factory.mktemp("cli-login"), ACCESS_TOKEN_TTL="30", DEVICE_CODE_INTERVAL="1")
    p.start()
    p.second = json.loads(p.manage("seed_demo", "--org", "second"))  # demo is a member of a second org too
    try:
        yield p
    finally:
        p.stop()


def cli(platform: LivePlatform, *args: str, timeout: float = 300, extra_env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in platform.env.items() if k not in ("RLMESH_API_KEY", "RLMESH_PLATFORM_URL")}
    env.update(RLMESH_CONFIG_DIR=str(platform.var / "cfg"), RLMESH_DATA_DIR=str(platform.var / "data"), RLMESH_KEYCHAIN="off", **(extra_env or {}))
    return subprocess.run([str(BIN / "rlmesh"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, input=stdin)


def org_ids(platform) -> tuple[str, str]:
    orgs = {o["name"]: o["providerId"] for o in json.loads(cli(platform, "org", "list", "--json").stdout)}
    return orgs["Demo Lab"], orgs["Second Lab"]


def test_login_whoami_orgs_eval_refresh_logout(platform):
    env = {k: v for k, v in platform.env.items() if k not in ("RLMESH_API_KEY", "RLMESH_PLATFORM_URL")}
    env.update(RLMESH_CONFIG_DIR=str(platform.var / "cfg"), RLMESH_DATA_DIR=str(platform.var / "data"), RLMESH_KEYCHAIN="off")
    proc = subprocess.Popen([str(BIN / "rlmesh"), "login", "--platform", platform.url], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    code = None
    for line in proc.stdout:
        lines.append(line)
        m = re.search(r"\b([B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4})\b", line)
        if m:
            code = m.group(1)
            break
    assert code, "".join(lines)
    web = Browser(platform.url)
    web.login("demo", "demo-password")
    page = web.get(f"/activate?user_code={code}")
    assert code in page
    demo_org = re.search(r'<option value="(org_[0-9a-f]+)"[^>]*selected', page).group(1)
    assert "Approved" in web.post("/activate", {"user_code": code, "decision": "approve", "organization": demo_org})
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, "".join(lines) + out
    assert 'Signed in as profile "default"' in out

    r = cli(platform, "whoami")
    assert r.returncode == 0 and "Demo Lab" in r.stdout, r.stdout + r.stderr
    who = json.loads(cli(platform, "whoami", "--json").stdout)
    assert who["status"] == "signed_in" and who["verified"] is True
    assert who["identity"]["organizationId"] == demo_org and who["identity"]["organizationName"] == "Demo Lab"

    tok1 = json.loads(cli(platform, "token", "--json").stdout)
    assert tok1["expiresAt"] is not None and tok1["token"].count(".") == 2
    tok2 = json.loads(cli(platform, "token", "--json").stdout)
    assert tok2["token"] != tok1["token"]  # 30 s tokens: every command refreshed (and rotated the refresh token)

    demo, second = org_ids(platform)
    r = cli(platform, "org", "list")
    assert r.returncode == 0 and "● Demo Lab" in r.stdout and "Second Lab" in r.stdout and "registry second" in r.stdout
    r = cli(platform, "org", "switch", second)
    assert r.returncode == 0 and f'now uses Second Lab ({second})' in r.stdout, r.stdout + r.stderr
    assert json.loads(cli(platform, "whoami", "--json").stdout)["identity"]["organizationId"] == second
    r = cli(platform, "org", "switch", "org_notmine")
    assert r.returncode == 1 and "not a member of org_notmine" in r.stderr
    assert cli(platform, "org", "switch", demo).returncode == 0

    r = cli(platform, "eval", "submit", str(ROOT / "examples" / "cartpole.json"), "--wait")
    assert r.returncode == 0 and "completed  30/30 episodes" in r.stdout, r.stdout + r.stderr
    eval_id = r.stdout.split("Submitted ")[1].split()[0]
    assert eval_id in cli(platform, "eval", "list").stdout
    cli(platform, "org", "switch", second)
    assert eval_id not in cli(platform, "eval", "list").stdout  # another organization's evaluation is invisible
    assert "HTTP 404" in cli(platform, "eval", "get", eval_id).stderr
    cli(platform, "org", "switch", demo)

    # registry login: the credential helper hands (user id, access token) to docker, which the registry's
    # token service (the platform) accepts
    docker_config = platform.var / "docker"
    env_docker = {"DOCKER_CONFIG": str(docker_config)}
    r = cli(platform, "registry", "login", extra_env=env_docker)
    assert r.returncode == 0 and "127.0.0.1:5000/demo" in r.stdout, r.stdout + r.stderr
    assert json.loads((docker_config / "config.json").read_text())["credHelpers"]["127.0.0.1:5000"] == "rlmesh"
    helper = cli(platform, "registry", "credential-helper", "get", extra_env=env_docker, stdin="127.0.0.1:5000")
    creds = json.loads(helper.stdout)
    assert creds["Username"] == who["identity"]["userId"]
    basic = base64.b64encode(f"{creds['Username']}:{creds['Secret']}".encode()).decode()
    req = urllib.request.Request(f"{platform.url}/v1/registry/token?service=rlmesh-registry&scope=repository:demo/x:pull,push",
                                 headers={"Authorization": f"Basic {basic}"})
    registry_token = json.load(urllib.request.urlopen(req))["token"]
    access = jwt.decode(registry_token, options={"verify_signature": False})["access"]
    assert access == [{"type": "repository", "name": "demo/x", "actions": ["pull", "push"]}]

    last = json.loads(cli(platform, "token", "--json").stdout)["token"]
    r = cli(platform, "logout")
    assert r.returncode == 0 and "Session revoked on the platform" in r.stdout, r.stdout + r.stderr
    req = urllib.request.Request(f"{platform.url}/v1/me", headers={"Authorization": f"Bearer {last}"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 401
    r = cli(platform, "whoami")
    assert r.returncode == 1
