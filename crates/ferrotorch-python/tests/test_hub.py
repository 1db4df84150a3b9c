"""torch.hub as torch's, over a local HTTP server standing in for the
network: the cache directory rules, downloads checked against the file
name's sha256 prefix (a bad one leaves nothing behind), the cache used
offline, the pre-1.6 one-file zip, hubconf entry points from a local
directory and from a GitHub-style zipball (trust check, zip-slip
refusal)."""

import functools
import hashlib
import http.server
import io
import os
import threading
import zipfile

import pytest

import ferrotorch as ft
from ferrotorch import hub


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield root, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def hub_dir(tmp_path):
    old = hub._hub_dir
    hub.set_dir(str(tmp_path / "hub"))
    yield tmp_path / "hub"
    hub._hub_dir = old


def test_the_cache_directory_follows_torchs_rules(monkeypatch, tmp_path):
    old = hub._hub_dir
    hub._hub_dir = None
    try:
        monkeypatch.delenv("TORCH_HOME", raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
        monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
        assert hub.get_dir() == str(tmp_path / "th" / "hub")
        hub.set_dir("~/elsewhere")
        assert hub.get_dir() == os.path.expanduser("~/elsewhere")
    finally:
        hub._hub_dir = old


def test_weights_download_once_check_their_hash_and_load(server, hub_dir, capsys):
    root, url = server
    sd = {"w": ft.arange(6.0).reshape(2, 3), "b": ft.tensor([1.5])}
    tmp = root / "tmp.pt"
    ft.save(sd, str(tmp))
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    name = f"model-{digest[:8]}.pt"
    tmp.rename(root / name)
    got = hub.load_state_dict_from_url(f"{url}/{name}", check_hash=True, progress=False)
    assert got["w"].tolist() == sd["w"].tolist() and got["b"].tolist() == [1.5]
    assert (hub_dir / "checkpoints" / name).exists()
    assert "Downloading" in capsys.readouterr().out
    (root / name).unlink()  # offline from now on: the cache answers
    again = hub.load_state_dict_from_url(f"{url}/{name}", check_hash=True, progress=False)
    assert again["w"].tolist() == sd["w"].tolist()
    assert "Downloading" not in capsys.readouterr().out

    bad = "model-deadbeef.pt"
    ft.save(sd, str(root / bad))
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef"'):
        hub.load_state_dict_from_url(f"{url}/{bad}", check_hash=True, progress=False)
    assert not any(p.name.startswith("model-deadbeef") for p in (hub_dir / "checkpoints").iterdir())
    other = hub.load_state_dict_from_url(f"{url}/{bad}", file_name="renamed.pt", progress=False)
    assert other["b"].tolist() == [1.5] and (hub_dir / "checkpoints" / "renamed.pt").exists()


def test_a_one_file_zip_is_torchs_old_format_and_is_unpacked(server, hub_dir):
    root, url = server
    buf = io.BytesIO()
    ft.save({"x": ft.ones(2)}, buf)
    with zipfile.ZipFile(root / "old.zip", "w") as z:
        z.writestr("old_weights.pt", buf.getvalue())
    with pytest.warns(FutureWarning, match="old format < 1.6"):
        got = hub.load_state_dict_from_url(f"{url}/old.zip", progress=False)
    assert got["x"].tolist() == [1.0, 1.0]


HUBCONF = '''
dependencies = ["json"]


def tiny(width=3):
    """A tiny linear model."""
    import ferrotorch
    return ferrotorch.nn.Linear(width, 1)


def _private():
    return None
'''


def test_hubconf_entry_points_from_a_local_directory(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    m = hub.load(str(repo), "tiny", source="local", width=5)
    assert isinstance(m, ft.nn.Linear) and m.in_features == 5
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        hub.load(str(repo), "nope", source="local")
    with pytest.raises(ValueError, match='Unknown source: "ftp"'):
        hub.load(str(repo), "tiny", source="ftp")
    (repo / "hubconf.py").write_text(HUBCONF.replace('["json"]', '["surely_not_installed_pkg"]'))
    with pytest.raises(RuntimeError, match="Missing dependencies: surely_not_installed_pkg"):
        hub.load(str(repo), "tiny", source="local")


def _zipball(path, entries):
    with zipfile.ZipFile(path, "w") as z:
        for name, text in entries.items():
            z.writestr(name, text)


def test_a_github_repository_is_downloaded_trusted_and_cached(server, hub_dir, monkeypatch):
    root, url = server
    monkeypatch.setattr(hub, "_GITHUB", url)
    (root / "someone" / "models" / "zipball").mkdir(parents=True)
    # a GitHub zipball: the repository's directory first, then its files
    _zipball(root / "someone" / "models" / "zipball" / "v1",
             {"someone-models-abc123/": "", "someone-models-abc123/hubconf.py": HUBCONF})
    assert hub.list("someone/models:v1", skip_validation=True, trust_repo=True) == ["tiny"]
    assert "someone_models" in (hub_dir / "trusted_list").read_text()
    assert hub.help("someone/models:v1", "tiny", trust_repo=True) == "A tiny linear model."
    m = hub.load("someone/models:v1", "tiny", trust_repo=True, width=2)
    assert m.in_features == 2 and (hub_dir / "someone_models_v1" / "hubconf.py").exists()
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    with pytest.raises(Exception, match="Untrusted repository"):
        hub.list("stranger/models:v1", skip_validation=True, trust_repo="check")

    _zipball(root / "someone" / "models" / "zipball" / "evil", {"x/": "", "x/../../escape.py": "x = 1"})
    with pytest.raises(ValueError, match="directory traversal"):
        hub.list("someone/models:evil", skip_validation=True, trust_repo=True)
    assert not (hub_dir.parent / "escape.py").exists()
