"""``torch.hub``: a cache of downloaded weights and of model repositories,
under ``$TORCH_HOME/hub`` (``~/.cache/torch/hub``, the same place torch
uses). ``load_state_dict_from_url`` downloads once (``urllib``, checking a
sha256 prefix when asked) and reads the file with ``ferrotorch.load``;
offline, a file already in the cache is used as it is.
``load``/``list``/``help`` import a repository's ``hubconf.py`` (from
GitHub, after the same trust check torch asks, or from a local
directory): that file is the repository's own Python code, run because the
caller asked for it, as in torch."""

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

class _Faketqdm:
    """Progress on stderr when ``tqdm`` is not installed (torch's fallback)."""

    def __init__(self, total=None, disable=False, unit=None, *args, **kwargs):
        self.total, self.disable, self.n = total, disable, 0

    def update(self, n):
        if self.disable:
            return
        self.n += n
        if self.total is None:
            sys.stderr.write(f"\r{self.n:.1f} bytes")
        else:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        sys.stderr.flush()

    def set_description(self, *args, **kwargs):
        pass

    def write(self, s):
        sys.stderr.write(f"{s}\n")

    def close(self):
        self.disable = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.disable:
            sys.stderr.write("\n")


try:
    from tqdm import tqdm
except ImportError:
    tqdm = _Faketqdm

# the hash prefix in a file name (``resnet18-bfd8deac.pth``)
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_PATH_SEP_PATTERN = re.compile(r"[/\\]")
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
_GITHUB = "https://github.com"
_GITHUB_API = "https://api.github.com"

_hub_dir = None


def _get_torch_home():
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(
        os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


def get_dir():
    """The hub's cache directory: ``set_dir``'s, else ``$TORCH_HOME/hub``
    (``$TORCH_HOME`` defaults to ``$XDG_CACHE_HOME/torch``, that to
    ``~/.cache``)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Use ``d`` as the hub's cache directory."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download ``url`` to ``dst`` through a temporary file beside it (so a
    broken download leaves no ``dst``), checking that the sha256 digest
    starts with ``hash_prefix`` when given."""
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        tmp_dst = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            f = open(tmp_dst, "x+b")  # noqa: SIM115 (closed in finally)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    req = Request(url, headers={"User-Agent": "torch.hub"})
    try:
        with urlopen(req) as u:
            lengths = u.info().get_all("Content-Length")
            size = int(lengths[0]) if lengths else None
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            with tqdm(total=size, disable=not progress, unit="B", unit_scale=True, unit_divisor=1024) as bar:
                while True:
                    buf = u.read(READ_DATA_CHUNK)
                    if not buf:
                        break
                    f.write(buf)
                    if sha256 is not None:
                        sha256.update(buf)
                    bar.update(len(buf))
            f.close()
            if sha256 is not None:
                digest = sha256.hexdigest()
                if digest[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _safe_extract_zip(zip_file, extract_to):
    """Extract, refusing entries with absolute paths or ``..`` (zip slip)."""
    extract_to = Path(extract_to).resolve(strict=False)
    for member in zip_file.infolist():
        name = os.path.normpath(member.filename)
        if name.startswith(("/", "\\")) or (len(name) >= 2 and name[1] == ":" and name[0].isalpha()):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(_PATH_SEP_PATTERN, name):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (extract_to / name).resolve(strict=False).is_relative_to(extract_to):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        zip_file.extract(member, extract_to)


def _is_legacy_zip_format(filename):
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            info = zf.infolist()
        return len(info) == 1 and not info[0].is_dir()
    return False


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """The object saved at ``url``, downloaded once into ``model_dir``
    (``get_dir()/checkpoints``) as ``file_name`` (the URL's last part) and
    read with ``ferrotorch.load``; ``check_hash`` checks the file name's
    ``-<sha256 prefix>.`` against the download. A one-file zip (torch's
    format before 1.6) is unpacked first."""
    import ferrotorch

    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in favor of default "
                      "zipfile format introduced in 1.6. Please redo torch.save() to save it in the new zipfile "
                      "format.", FutureWarning, stacklevel=2)
        with zipfile.ZipFile(cached_file) as f:
            members = f.infolist()
            _safe_extract_zip(f, model_dir)
            cached_file = os.path.join(model_dir, members[0].filename)
    return ferrotorch.load(cached_file, map_location=map_location, weights_only=weights_only)


# ---- repositories ----


@contextlib.contextmanager
def _add_to_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name, path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise RuntimeError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _remove_if_exists(path):
    if os.path.exists(path):
        if os.path.isfile(path):
            os.remove(path)
        else:
            shutil.rmtree(path)


def _parse_repo_info(github):
    """``owner/name[:ref]`` -> (owner, name, ref); without a ref, ``main``
    if GitHub has one, else ``master`` (offline: whichever is cached)."""
    repo_info, ref = github.split(":") if ":" in github else (github, None)
    owner, name = repo_info.split("/")
    if ref is None:
        try:
            with urlopen(f"{_GITHUB}/{owner}/{name}/tree/main/"):
                ref = "main"
        except HTTPError as e:
            if e.code != 404:
                raise
            ref = "master"
        except URLError as e:
            for possible in ("main", "master"):
                if os.path.exists(f"{get_dir()}/{owner}_{name}_{possible}"):
                    ref = possible
                    break
            if ref is None:
                raise RuntimeError("It looks like there is no internet connection and the repo could not be found "
                                   f"in the cache ({get_dir()})") from e
    return owner, name, ref


def _read_url(url):
    with urlopen(url) as r:
        return r.read().decode(r.headers.get_content_charset("utf-8"))


def _validate_not_a_forked_repo(owner, name, ref):
    headers = {"Accept": "application/vnd.github.v3+json"}
    token = os.environ.get(ENV_GITHUB_TOKEN)
    if token is not None:
        headers["Authorization"] = f"token {token}"
    for prefix in (f"{_GITHUB_API}/repos/{owner}/{name}/branches", f"{_GITHUB_API}/repos/{owner}/{name}/tags"):
        page = 0
        while True:
            page += 1
            url = f"{prefix}?per_page=100&page={page}"
            try:
                response = json.loads(_read_url(Request(url, headers=headers)))
            except HTTPError:
                headers.pop("Authorization", None)
                response = json.loads(_read_url(Request(url, headers=headers)))
            if not response:
                break
            for br in response:
                if br["name"] == ref or br["commit"]["sha"].startswith(ref):
                    return
    raise ValueError(f"Cannot find {ref} in {_GITHUB}/{owner}/{name}. If it's a commit from a forked repo, "
                     "please call hub.load() with forked repo directly.")


def _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo):
    """torch's trust check: a repository not trusted before (``trusted_list``
    in the hub directory) is downloaded only after the user says yes, or
    with ``trust_repo=True``."""
    hub_dir = get_dir()
    path = os.path.join(hub_dir, "trusted_list")
    if not os.path.exists(path):
        Path(path).touch()
    with open(path) as f:
        trusted = tuple(line.strip() for line in f)
    legacy = next(os.walk(hub_dir))[1]
    owner_name = f"{owner}_{name}"
    is_trusted = owner_name in trusted or owner_name_branch in legacy or owner in _TRUSTED_REPO_OWNERS
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(f"The repository {owner_name} does not belong to the list of trusted repositories and as "
                         "such cannot be downloaded. Do you trust this repository and wish to add it to the trusted "
                         "list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")  # noqa: TRY002 (torch's exception)
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(path, "a") as f:
            f.write(owner_name + "\n")


def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True, skip_validation=False):
    """The repository's directory in the cache, downloaded (a GitHub
    zipball, extracted safely) unless cached or ``force_reload``."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo_info(github)
    normalized = ref.replace("/", "_")
    owner_name_branch = "_".join([owner, name, normalized])
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_forked_repo(owner, name, ref)
    cached_file = os.path.join(hub_dir, normalized + ".zip")
    _remove_if_exists(cached_file)
    url = f"{_GITHUB}/{owner}/{name}/zipball/{ref}"
    sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
    try:
        download_url_to_file(url, cached_file, progress=False)
    except HTTPError as err:
        if err.code != 300:
            raise
        warnings.warn(f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the repo? Torchhub "
                      "will now assume that it's a branch. You can disambiguate tags and branches by explicitly "
                      "passing refs/heads/branch_name or refs/tags/tag_name as the ref. That might require using "
                      "skip_validation=True.", stacklevel=2)
        download_url_to_file(f"{_GITHUB}/{owner}/{name}/zipball/refs/heads/{ref}", cached_file, progress=False)
    with zipfile.ZipFile(cached_file) as z:
        extracted = os.path.join(hub_dir, z.infolist()[0].filename)
        _remove_if_exists(extracted)
        _safe_extract_zip(z, hub_dir)
    _remove_if_exists(cached_file)
    _remove_if_exists(repo_dir)
    shutil.move(extracted, repo_dir)
    return repo_dir


def _hubconf(repo_dir):
    with _add_to_sys_path(repo_dir):
        return _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))


def _load_entry_from_hubconf(m, model):
    import importlib.util

    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    deps = getattr(m, VAR_DEPENDENCY, None)
    if deps is not None:
        missing = [p for p in deps if importlib.util.find_spec(p) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    func = getattr(m, model, None) if model in dir(m) else None
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """The entry points (public callables) of the repository's ``hubconf.py``."""
    m = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, verbose, skip_validation))
    return [f for f in dir(m) if callable(getattr(m, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """The docstring of entry point ``model``."""
    m = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, True, skip_validation))
    return _load_entry_from_hubconf(m, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """``model(*args, **kwargs)`` from the repository's ``hubconf.py``: a
    GitHub ``owner/name[:ref]`` (``source='github'``) or a directory
    (``source='local'``)."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose, skip_validation)
    with _add_to_sys_path(repo_or_dir):
        m = _import_module(MODULE_HUBCONF, os.path.join(repo_or_dir, MODULE_HUBCONF))
        return _load_entry_from_hubconf(m, model)(*args, **kwargs)
