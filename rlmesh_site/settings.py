"""Settings for the RLMesh evaluation platform, read from the environment only.

Defaults give the embedded single-machine setup (SQLite, a broker that needs no
server, the ``local`` runtime, DEBUG on, secrets generated once into ``var/secrets.json``).
Production sets ``RLMESH_ENV=production`` and must then provide ``SECRET_KEY``,
``ALLOWED_HOSTS``, ``API_KEY_PEPPER`` and ``PUBLIC_URL``; anything missing raises
``ImproperlyConfigured`` at start-up. Every variable read here is in the README's table.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from rlmesh_site.devsecrets import load_or_create
from rlmesh_site.env import env_bool, env_float, env_int, env_list, env_str
from rlmesh_site.private_files import private_folder, private_sqlite_file

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("RLMESH_VAR_DIR", BASE_DIR / "var"))

# ----------------------------------------------------------------------- core
PRODUCTION = os.environ.get("RLMESH_ENV", "development") == "production"
DEBUG = env_bool("DEBUG", not PRODUCTION)
VAR_DIR.mkdir(parents=True, exist_ok=True)
#: Outside production, secrets nobody set are generated once into var/secrets.json (mode 0600) and reused by
#: every process of this installation; production must set them (a missing one fails below).
GENERATED_SECRETS = {} if PRODUCTION else load_or_create(VAR_DIR / "secrets.json")
SECRET_KEY = env_str("SECRET_KEY", GENERATED_SECRETS.get("SECRET_KEY", ""))
API_KEY_PEPPER = env_str("API_KEY_PEPPER", GENERATED_SECRETS.get("API_KEY_PEPPER", ""))
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "" if PRODUCTION else "*").split(",") if h]
#: Canonical base URL of the site; every advertised URL (dashboard links, /v1/info) is built from it,
#: never from the request's Host header.
PUBLIC_URL = env_str("PUBLIC_URL", "" if PRODUCTION else f"http://127.0.0.1:{os.environ.get('PORT', '8000')}")
PUBLIC_URL = PUBLIC_URL.rstrip("/")

if PRODUCTION:
    missing = [
        n for n, v in (("SECRET_KEY", SECRET_KEY), ("API_KEY_PEPPER", API_KEY_PEPPER), ("PUBLIC_URL", PUBLIC_URL)) if not v
    ]
    if not ALLOWED_HOSTS:
        missing.append("ALLOWED_HOSTS")
    if missing:
        raise ImproperlyConfigured(f"production settings need: {', '.join(missing)}")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "rlmesh_site.apps.StaticFiles",  # django.contrib.staticfiles, ignoring unused vendored files
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "csp",
    "evaluations",
]

#: Behind one TLS-terminating proxy that sets X-Forwarded-Proto and appends to X-Forwarded-For (deploy/Caddyfile).
BEHIND_PROXY = env_bool("RLMESH_BEHIND_PROXY", False)
#: The web server runs Django under ASGI (``rlmesh_site/asgi.py`` sets it): connections pooled, not kept per thread.
RLMESH_ASGI = env_bool("RLMESH_ASGI", False)
MIDDLEWARE = [
    # First, under ASGI (the web server as deployed): file responses are sent from the event loop, holding no request
    # thread (a slow reader of a dataset zip must not take the threads every other request needs).
    *(["rlmesh_site.streaming.AsyncFileStreamingMiddleware"] if RLMESH_ASGI else []),
    *(["rlmesh_site.proxy.ForwardedForMiddleware"] if BEHIND_PROXY else []),
    "django.middleware.security.SecurityMiddleware",
    "evaluations.middleware.LengthRequiredMiddleware",  # a chunked body (no Content-Length): 411, not empty
    # Static files (collectstatic output) straight from gunicorn, compressed and cached.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Turns django-ratelimit's block into RATELIMIT_VIEW's 429 instead of a 403.
    "django_ratelimit.middleware.RatelimitMiddleware",
    "evaluations.middleware.NoOrganizationMiddleware",
]

# The official CLI posts to exact paths; a slash redirect would turn a POST into a GET.
APPEND_SLASH = False
ROOT_URLCONF = "rlmesh_site.urls"
WSGI_APPLICATION = "rlmesh_site.wsgi.application"
ASGI_APPLICATION = "rlmesh_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "evaluations.context_processors.organization",
                "rlmesh_site.context_processors.site",
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    }
]

# ------------------------------------------------------------------- database
#: Seconds a worker thread keeps its database connection (``RLMESH_DB_CONN_MAX_AGE``; 0: one per task), health-checked
#: before reuse; the web server (ASGI) pools them instead.
RLMESH_DB_CONN_MAX_AGE = 0 if RLMESH_ASGI else env_int("RLMESH_DB_CONN_MAX_AGE", 60)
#: Connections one web process's pool holds at most (PostgreSQL under ASGI); a request waits up to 30 s for one.
RLMESH_DB_POOL_MAX = env_int("RLMESH_DB_POOL_MAX", 16)
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'rlmesh.sqlite3'}"),
        conn_max_age=RLMESH_DB_CONN_MAX_AGE, conn_health_checks=True,  # pooled ones too, as they leave the pool
    )
}
if RLMESH_ASGI and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": RLMESH_DB_POOL_MAX, "timeout": 30}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server read while a worker writes; IMMEDIATE transactions take the write
    # lock up front so concurrent writers wait (timeout) instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    private_sqlite_file(str(DATABASES["default"]["NAME"]))

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/evaluations"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Plotly's browser bundle ships inside the plotly wheel: served from there, never from a CDN.
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", Path(__import__("plotly").__file__).parent / "package_data")]
STATIC_ROOT = VAR_DIR / "static"

# Episode videos and imported media: var/media by default, or any Django storage backend by dotted path (e.g.
# storages.backends.s3.S3Storage, django-storages[s3] and AWS_* set); the dashboard serves them authorized.
MEDIA_ROOT = Path(os.environ.get("RLMESH_MEDIA_ROOT", VAR_DIR / "media"))
MEDIA_URL = "/media/"
# Tenant files (videos, transcripts, screenshots, imported media): FileSystemStorage writes each file with
# FILE_UPLOAD_PERMISSIONS and each folder with FILE_UPLOAD_DIRECTORY_PERMISSIONS in web and worker processes alike
# (every writer uses the default storage). Owner-only; RLMESH_MEDIA_GROUP_READABLE=True gives 0640/0750 for a proxy
# of another user in the service user's group (docs/running/hardening.md).
RLMESH_MEDIA_GROUP_READABLE = env_bool("RLMESH_MEDIA_GROUP_READABLE", False)
FILE_UPLOAD_PERMISSIONS = 0o640 if RLMESH_MEDIA_GROUP_READABLE else 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o750 if RLMESH_MEDIA_GROUP_READABLE else 0o700


STORAGES = {
    "default": {
        "BACKEND": os.environ.get("RLMESH_MEDIA_STORAGE", "django.core.files.storage.FileSystemStorage"),
        "OPTIONS": json.loads(os.environ.get("RLMESH_MEDIA_STORAGE_OPTIONS", "{}")),
    },
    # Hashed, compressed file names (cached forever by browsers) need `manage.py collectstatic` before the server
    # starts: make demo, the live tests and deploy/ run it. Without the manifest, names stay plain (unit tests).
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("RLMESH_STATIC_MANIFEST", PRODUCTION)
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
if STORAGES["default"]["BACKEND"] == "django.core.files.storage.FileSystemStorage":
    private_folder(MEDIA_ROOT, FILE_UPLOAD_DIRECTORY_PERMISSIONS)
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# -------------------------------------------------- TLS proxy, cookies, CSP
#: https in PUBLIC_URL means TLS is terminated in front of the site: cookies are Secure, HSTS is sent, and plain
#: http requests are redirected (the proxy normally does that itself first).
HTTPS = PUBLIC_URL.startswith("https://")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_PROXY else None
#: Origins a browser may POST from: PUBLIC_URL's, then any listed (comma-separated, scheme included).
_PUBLIC_ORIGIN = "{0.scheme}://{0.netloc}".format(urlsplit(PUBLIC_URL)) if PUBLIC_URL else ""
CSRF_TRUSTED_ORIGINS = list(dict.fromkeys([o for o in (_PUBLIC_ORIGIN, *env_list("CSRF_TRUSTED_ORIGINS")) if o]))
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", HTTPS)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
#: Preloading is the domain owner's decision (hstspreload.org), so it is off unless asked for; `check --deploy`
#: would warn about that choice (security.W021), which is silenced below for that reason only.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# The dashboard's scripts are files under static/ (and vendored htmx and Plotly) plus any <script> carrying the
# response's nonce; no inline event handlers, no eval. Styles may be inline: Plotly and htmx inject <style>
# elements and the templates use style attributes for progress bars.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "media-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# Request bodies larger than this get 413 (the JSON parser checks Content-Length first).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BYTES", 1024 * 1024)

# ------------------------------------------------------------------------ DRF
#: Bundle uploads (POST /v1/evaluations/imports and the dashboard's import page) per user (or address).
RATELIMIT_IMPORT = os.environ.get("RATELIMIT_IMPORT", "10/m")
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["evaluations.auth.BearerAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["evaluations.auth.IsOrganizationMember"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["evaluations.api.parsers.StrictJSONParser"],
    "EXCEPTION_HANDLER": "evaluations.api.exceptions.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "evaluations.api.schema.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # Scoped throttles (views set throttle_scope); counted in the default cache, per user or address.
    "DEFAULT_THROTTLE_RATES": {"imports": RATELIMIT_IMPORT},
}

SPECTACULAR_SETTINGS = {
    "TITLE": "RLMesh evaluation platform API",
    "DESCRIPTION": ("Run models × tasks × episodes against rlmesh environments and read trustworthy scores. "
                    'Authenticate with `Authorization: Bearer <API key>`. Every error is `{"error": {"code", "message", "details"}}`.'),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR", "SWAGGER_UI_FAVICON_HREF": "SIDECAR", "REDOC_DIST": "SIDECAR",
    # Request bodies get components of their own (``…Request``) where a string that refuses "" says minLength: 1.
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "evaluations.api.schema.query_rules"],
    # Several fields are named "status"; each choice set gets a stable name instead of a hashed one.
    "ENUM_NAME_OVERRIDES": {
        "EvaluationStatusEnum": "evaluations.choices.EvaluationStatus",
        "EpisodeStatusEnum": "evaluations.choices.EpisodeStatus",
        "ProbeStatusEnum": "evaluations.choices.ProbeStatus",
        # Two vocabularies of how an episode ended: /v1's and the seed-004 API's words.
        "StopConditionEnum": "evaluations.choices.StopCondition",
        "AgentStopConditionEnum": "evaluations.api.agents.serializers.AGENT_STOP_CONDITIONS",
        "AgentTaskOutcomeEnum": "evaluations.api.agents.serializers.AGENT_OUTCOMES",
        # Two verdicts: a paired comparison's (B vs A) and a reproduction's (ours vs a published number).
        "ComparisonVerdictEnum": "evaluations.api.serializers.comparisons.VERDICTS",
        "ReproductionVerdictEnum": "evaluations.domain.reproduction.VERDICTS",
    },
}

# --------------------------------------------------------------------- Celery
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}")
if CELERY_BROKER_URL.startswith("sqla+sqlite:///"):
    private_sqlite_file(CELERY_BROKER_URL.removeprefix("sqla+sqlite:///"))
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Shards are sized to finish well inside this (Redis re-delivers unacked messages after it).
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)} if CELERY_BROKER_URL.startswith("redis") else {}
)
#: The database broker polls its table this often (seconds; kombu's default is 1 s): submit → first step stays ≤ 1 s.
CELERY_BROKER_POLLING_INTERVAL = env_float("CELERY_BROKER_POLLING_INTERVAL", 0.1)
if CELERY_BROKER_URL.startswith("sqla+"):
    # rlmesh_site.broker.DatabaseTransport is kombu's SQLAlchemy transport with that polling interval.
    CELERY_BROKER_URL = CELERY_BROKER_URL.removeprefix("sqla+")
    CELERY_BROKER_TRANSPORT = "rlmesh_site.broker:DatabaseTransport"
elif CELERY_BROKER_URL.startswith("redis://"):
    # rlmesh_site.broker.RedisTransport: kombu's, with workers that survive a Redis restart.
    CELERY_BROKER_TRANSPORT = "rlmesh_site.broker:RedisTransport"
# Each task declares its queue (evaluations/tasks.py); workers consume them with -Q shards,maintenance.
#: Shards one worker host runs at once: twice its cores by default — a shard's loop mostly waits on its env and model
#: servers (measured: workers 4 = 3.5x workers 1 on 2 cores with 4, 1.7x with 2).
CELERY_WORKER_CONCURRENCY = env_int("RLMESH_WORKER_CONCURRENCY", 2 * (os.cpu_count() or 1))
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# ------------------------------------------------------------------- identity
#: OAuth public client id the official CLI uses (advertised in /v1/info).
RLMESH_CLI_CLIENT_ID = env_str("RLMESH_CLI_CLIENT_ID", "rlmesh-cli")
#: HS256 key for access-token JWTs; by default generated (development) or derived from SECRET_KEY (production).
JWT_SIGNING_KEY = (
    env_str("JWT_SIGNING_KEY", GENERATED_SECRETS.get("JWT_SIGNING_KEY", ""))
    or hashlib.sha256(f"jwt:{SECRET_KEY}".encode()).hexdigest()
)
#: Access-token lifetime in seconds (the CLI refreshes when ≤ 60 s are left).
ACCESS_TOKEN_TTL = env_int("ACCESS_TOKEN_TTL", 900)
#: Device codes expire after this many seconds; clients poll no faster than DEVICE_CODE_INTERVAL.
DEVICE_CODE_TTL = env_int("DEVICE_CODE_TTL", 600)
DEVICE_CODE_INTERVAL = env_int("DEVICE_CODE_INTERVAL", 5)
#: Requests per minute per client address on the sign-in form and the OAuth endpoints.
RATELIMIT_LOGIN = os.environ.get("RATELIMIT_LOGIN", "20/m")
RATELIMIT_OAUTH = os.environ.get("RATELIMIT_OAUTH", "120/m")
#: The one sign-in limit (evaluations.auth): failed passwords (dashboard, admin), keys and tokens (/v1, /agents,
#: registry Basic, /oauth/token) per address; past it passwords are not checked, bad keys get 429 (docs/running/hardening.md).
RATELIMIT_AUTH_FAILURES = os.environ.get("RATELIMIT_AUTH_FAILURES", "30/m")
RATELIMIT_VIEW = "evaluations.views.identity.rate_limited"
# Rate-limit counters need a cache shared by every web process (gunicorn runs several; local memory would count
# per process): Redis in production (CACHE_REDIS_URL), else files under RLMESH_VAR_DIR/cache.
CACHE_REDIS_URL = os.environ.get("CACHE_REDIS_URL", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_REDIS_URL}
    if CACHE_REDIS_URL
    else {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(VAR_DIR / "cache")}
}
SILENCED_SYSTEM_CHECKS = ([] if CACHE_REDIS_URL else ["django_ratelimit.E003", "django_ratelimit.W001"]) + (
    [] if SECURE_HSTS_PRELOAD else ["security.W021"]
)

# ------------------------------------------------------------------ registry
#: host:port of the platform's OCI registry (CNCF Distribution), as clients push to it.
RLMESH_REGISTRY_HOST = os.environ.get("RLMESH_REGISTRY_HOST", "127.0.0.1:5000")
RLMESH_REGISTRY_DIR = Path(os.environ.get("RLMESH_REGISTRY_DIR", VAR_DIR / "registry"))
#: Bearer secret the registry sends with push notifications; and the workers' pull-only registry password.
#: Both by default generated (development) or derived from SECRET_KEY (production).
RLMESH_REGISTRY_NOTIFY_SECRET = env_str(
    "RLMESH_REGISTRY_NOTIFY_SECRET",
    GENERATED_SECRETS.get("RLMESH_REGISTRY_NOTIFY_SECRET") or hashlib.sha256(f"notify:{SECRET_KEY}".encode()).hexdigest(),
)
#: The account workers pull images with (any name here must match what the registry's token service expects).
RLMESH_REGISTRY_WORKER_ACCOUNT = "rlmesh-worker"
RLMESH_REGISTRY_WORKER_SECRET = env_str(
    "RLMESH_REGISTRY_WORKER_SECRET",
    GENERATED_SECRETS.get("RLMESH_REGISTRY_WORKER_SECRET") or hashlib.sha256(f"worker:{SECRET_KEY}".encode()).hexdigest(),
)
#: Docker Engine API endpoint for the docker runtime and probes (Podman's service here, Docker elsewhere).
RLMESH_DOCKER_HOST = os.environ.get("DOCKER_HOST", f"unix://{VAR_DIR / 'podman.sock'}")
#: Tags this deployment's containers, so the orphan reaper never touches another deployment's on a shared engine.
RLMESH_INSTANCE_ID = os.environ.get("RLMESH_INSTANCE_ID", "") or hashlib.sha256(f"{VAR_DIR}:{SECRET_KEY}".encode()).hexdigest()[:12]
#: Resource limits of every untrusted container (spec/CONTAINERS.md §6).
RLMESH_CONTAINER_MEMORY = os.environ.get("RLMESH_CONTAINER_MEMORY", "1g")
RLMESH_CONTAINER_CPUS = env_float("RLMESH_CONTAINER_CPUS", 1.0)
RLMESH_CONTAINER_PIDS = env_int("RLMESH_CONTAINER_PIDS", 256)
#: Network of untrusted containers: containers/sandbox-network.sh makes "rlsandbox", where a container can only
#: answer on its published serving port (no egress, no host services, no peers). "" = the engine's default bridge.
RLMESH_CONTAINER_NETWORK = os.environ.get("RLMESH_CONTAINER_NETWORK", "rlsandbox")
#: "unix": env containers serve on a unix socket in a shared host directory and get no network at all (only when
#: the engine is local); "tcp": a published port on the sandbox network, like models (rlmesh's model client
#: accepts only TCP).
RLMESH_CONTAINER_ENV_TRANSPORT = os.environ.get("RLMESH_CONTAINER_ENV_TRANSPORT", "unix")

# -------------------------------------------------------------------- runtime
#: Dotted path of the runtime backend for trusted (prebuilt) sources.
RLMESH_RUNTIME = os.environ.get("RLMESH_RUNTIME", "evaluations.runtime.local.LocalRuntime")
RLMESH_WORKFLOW_EDITION = env_str("RLMESH_WORKFLOW_EDITION", "2026.06")
#: Interpreters of ``python+<name>://`` sources (scripts/setup-<name>.sh).
RLMESH_PYTHON_ENVS = {n: os.environ.get(f"RLMESH_{n.upper()}_PYTHON", str(BASE_DIR / f".venv-{n}" / "bin" / "python")) for n in ("metaworld", "libero", "lerobot")}
# Weights and checkpoints an operator installs (SmolVLA, LeRobot checkpoints, hub-only files): rlmesh_site/weights.py.
from rlmesh_site.weights import *  # noqa: E402, F403
#: The shards of an evaluation on a host that run one model share its server (rlmesh model servers take many sessions).
RLMESH_SHARE_MODEL_SERVERS = env_bool("RLMESH_SHARE_MODEL_SERVERS", True)
#: Rows of every forward pass of a batching model server (LeRobot ACT and SmolVLA; 0: one call at a time) and the most ms a
#: request waits for others: docs/running/scaling.md. The batch shape is recorded on the workload (it fixes the bits).
RLMESH_MODEL_BATCH = env_int("RLMESH_MODEL_BATCH", 0)
RLMESH_MODEL_BATCH_WAIT_MS = env_float("RLMESH_MODEL_BATCH_WAIT_MS", 10.0)
#: torch's CPU threads in every LeRobot model server and inference process (0: torch's default, one per core). It
#: fixes a CPU episode's bits, so it is recorded on the workload (``threads``) and does not follow the host's cores.
RLMESH_MODEL_THREADS = env_int("RLMESH_MODEL_THREADS", 1)
#: A host inference process with a request in flight this long is wedged: the next shard to lease it kills it.
RLMESH_INFERENCE_STALL_SECONDS = env_float("RLMESH_INFERENCE_STALL_SECONDS", 600.0)
RLMESH_LOCAL_FORKSERVER = env_bool("RLMESH_LOCAL_FORKSERVER", True)  # fork local servers: runtime.forkserver
RLMESH_LIBERO_FORKSERVER = env_bool("RLMESH_LIBERO_FORKSERVER", True)  # state-only LIBERO envs: runtime.zygote
RLMESH_TCP_NODELAY = env_bool("RLMESH_TCP_NODELAY", True)  # on local TCP listeners: docs/working/image-transport.md
#: Where the local runtime keeps unix sockets and server logs.
RLMESH_RUN_DIR = Path(os.environ.get("RLMESH_RUN_DIR", VAR_DIR / "run"))
# Describe envelopes of prebuilt sources by what they depend on (prebuilt/describing.py); empty: no cache.
RLMESH_DESCRIBE_CACHE_DIR = os.environ.get("RLMESH_DESCRIBE_CACHE_DIR", str(VAR_DIR / "describe-cache")) or None
#: Seconds an env or model server may take to accept a handshake after it is started.
RLMESH_SERVER_READY_TIMEOUT = env_float("RLMESH_SERVER_READY_TIMEOUT", 60.0)
#: The most seconds a stopped server's last output is waited for (runtime.docker.Container.final_output).
RLMESH_CONTAINER_OUTPUT_WAIT = env_float("RLMESH_CONTAINER_OUTPUT_WAIT", 30.0)
#: Seconds one env step or model predict may take before the episode ends with an error.
RLMESH_REQUEST_TIMEOUT = env_float("RLMESH_REQUEST_TIMEOUT", 30.0)
#: Default wall-time cap of one episode, in seconds (a request's timeoutSeconds can lower it).
RLMESH_EPISODE_TIMEOUT = env_float("RLMESH_EPISODE_TIMEOUT", 600.0)
# The size limits of requests, imports, storage, downloads, recordings and exports: rlmesh_site/limits.py.
from rlmesh_site.limits import *  # noqa: E402, F403
# Shards, heartbeats, the reaper and the rates previews estimate with: rlmesh_site/scheduling.py.
from rlmesh_site.scheduling import *  # noqa: E402, F403

# ------------------------------------------------------- agent evaluations
#: Fernet key (urlsafe base64 of 32 bytes) encrypting stored secrets such as agent endpoint keys; by default
#: derived from SECRET_KEY (rotating SECRET_KEY then makes the keys of unfinished runs unreadable).
RLMESH_SECRETS_KEY = env_str("RLMESH_SECRETS_KEY", "") or __import__("base64").urlsafe_b64encode(
    hashlib.sha256(f"secrets:{SECRET_KEY}".encode()).digest()).decode()
#: Allow agent endpoints and webhook targets on private, loopback and link-local addresses (the demo does, for
#: its reference agent on 127.0.0.1). Off by default: a run could otherwise probe the platform's own network.
RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = env_bool("RLMESH_AGENT_ALLOW_PRIVATE_TARGETS", False)
#: Per-call timeout (s) and retries of the endpoint bridge; a call still failing after them ends the rollout.
RLMESH_AGENT_CALL_TIMEOUT = env_float("RLMESH_AGENT_CALL_TIMEOUT", 60.0)
RLMESH_AGENT_CALL_RETRIES = env_int("RLMESH_AGENT_CALL_RETRIES", 3)
RLMESH_AGENT_CALL_BACKOFF = env_float("RLMESH_AGENT_CALL_BACKOFF", 0.5)
#: Webhook deliveries: attempts in all, the first retry's delay (s, doubled each time) and the per-request timeout.
RLMESH_WEBHOOK_MAX_ATTEMPTS = env_int("RLMESH_WEBHOOK_MAX_ATTEMPTS", 8)
RLMESH_WEBHOOK_BACKOFF_SECONDS = env_float("RLMESH_WEBHOOK_BACKOFF_SECONDS", 5.0)
RLMESH_WEBHOOK_TIMEOUT = env_float("RLMESH_WEBHOOK_TIMEOUT", 10.0)

# -------------------------------------------------------------------- logging
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
