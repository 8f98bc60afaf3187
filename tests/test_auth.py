"""Logins (--auth-file, ATTENTION_LENS_AUTH, --auth): the launched app refuses a wrong password and accepts the right
one; parse_auth; the --share-without---auth warning of main() (checked without launching anything)."""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr
import httpx
import pytest

from attention_lens import launch as app
from attention_lens.shell import memory
from tests.browser import serve
from tests.conftest import DEVICE
from transformer.decode.decoding import Translator

USER, PASSWORD = "user", "pw"
SENTENCE = "Ein Hund rennt."


@pytest.fixture(scope="module")
def auth_served(tiny_trained):
    tr = Translator.load(tiny_trained, device=DEVICE)
    with serve(tr, auth=(USER, PASSWORD)) as url:
        yield tr, url


def login(url, username, password) -> httpx.Response:
    return httpx.post(url + "login", data={"username": username, "password": password}, timeout=30)


def call_translate(url, text, cookies=None) -> httpx.Response:
    # the raw HTTP API passes every parameter: the text and the model ("" is the default model)
    return httpx.post(url + "gradio_api/call/translate", json={"data": [text, ""]}, cookies=cookies, timeout=30)


@pytest.mark.parametrize("username,password", [(USER, "wrong"), (USER, ""), ("", PASSWORD), ("nobody", PASSWORD),
                                               (USER, PASSWORD + " "), (USER, PASSWORD.upper()),
                                               (USER, "' OR '1'='1"), ("user\x00", PASSWORD)])
def test_wrong_credentials_are_refused(auth_served, username, password):
    _, url = auth_served
    r = login(url, username, password)
    assert r.status_code in (400, 401, 422), r.text
    assert not any(k.startswith("access-token") for k in r.cookies)


def test_right_password_is_accepted_and_opens_the_api(auth_served):
    tr, url = auth_served
    r = login(url, USER, PASSWORD)
    assert r.status_code == 200 and r.json() == {"success": True}
    cookies = dict(r.cookies)
    assert any(k.startswith("access-token") for k in cookies)
    r = httpx.get(url + "config", cookies=cookies, timeout=30)
    assert r.status_code == 200 and r.json().get("auth_required") is not True and "German sentence" in r.text
    r = call_translate(url, SENTENCE, cookies)
    assert r.status_code == 200 and "event_id" in r.json()
    with httpx.stream("GET", url + f"gradio_api/call/translate/{r.json()['event_id']}", cookies=cookies,
                      timeout=30) as s:
        body = "".join(s.iter_text())
    assert "event: complete" in body and tr.translate(SENTENCE) in body


def test_without_login_nothing_is_served(auth_served):
    _, url = auth_served
    r = httpx.get(url + "config", timeout=30)
    assert r.status_code == 401 or r.json().get("auth_required") is True
    assert "German sentence" not in r.text and "translate" not in r.text  # no components, no API names
    for r in (httpx.get(url + "gradio_api/info", timeout=30), call_translate(url, SENTENCE),
              httpx.get(url + "gradio_api/login_check", timeout=30)):
        assert r.status_code == 401, (r.request.url, r.status_code, r.text[:200])
    # a forged cookie is no login either
    forged = {"access-token": "forged", "access-token-unsecure": "forged"}
    assert call_translate(url, SENTENCE, forged).status_code == 401


def test_gradio_client_needs_the_right_password(auth_served):
    from gradio_client import Client
    tr, url = auth_served
    with pytest.raises(Exception, match="(?i)login|credentials|auth"):
        Client(url, auth=(USER, "wrong"), verbose=False)
    with pytest.raises(Exception):  # noqa: B017 (whatever the client raises: the call must not get through)
        Client(url, verbose=False).predict(SENTENCE, api_name="/translate")
    c = Client(url, auth=(USER, PASSWORD), verbose=False)
    try:
        assert c.predict(SENTENCE, api_name="/translate") == tr.translate(SENTENCE)
        c.predict(SENTENCE, 8, api_name="/start")
        text, payload, _ = c.predict(8, api_name="/run")
        assert text == tr.translate(SENTENCE) and payload["done"]
    finally:
        c.close()


# -- parse_auth -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value,want", [("user:password", ("user", "password")), ("a:b:c", ("a", "b:c")),
                                        ("me:p@ss word", ("me", "p@ss word")), (None, None), ("", None)])
def test_parse_auth_good_values(value, want):
    assert app.parse_auth(value) == want


@pytest.mark.parametrize("value", ["userpassword", "user", ":", "user:", ":password"])
def test_parse_auth_bad_values_exit_with_a_message(value):
    with pytest.raises(SystemExit) as e:
        app.parse_auth(value)
    assert "user:password" in str(e.value.code)


# -- main(): logins from a file, the environment or --auth, and what reaches launch(), without launching --

@pytest.fixture()
def no_launch(monkeypatch, tiny_translator):
    calls = []
    for name in (app.AUTH_ENV, "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Translator, "load", lambda *a, **k: tiny_translator)
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, *a, **k: calls.append(k))
    monkeypatch.setattr(memory, "tune_allocator", dict)
    return calls


WARNING = "--share without logins"
VISIBLE = "process list"


def test_share_without_auth_warns_on_stderr(no_launch, capsys):
    app.main(["--share"])
    err = capsys.readouterr().err
    assert "WARNING" in err and WARNING in err
    assert len(no_launch) == 1 and no_launch[0]["share"] is True and no_launch[0]["auth"] is None


def test_auth_flag_still_works_but_warns_that_the_password_is_visible(no_launch, capsys):
    app.main(["--share", "--auth", "user:pw", "--host", "0.0.0.0", "--port", "7999"])
    err = capsys.readouterr().err
    assert WARNING not in err and VISIBLE in err
    (kw,) = no_launch
    assert kw["auth"] == [("user", "pw")] and kw["share"] is True
    assert kw["server_name"] == "0.0.0.0" and kw["server_port"] == 7999


def test_auth_file_gives_every_login_without_a_warning(no_launch, capsys, tmp_path):
    f = tmp_path / "logins"
    f.write_text("# teachers\nann:secret one\n\nbob:p:w\n")
    app.main(["--share", "--auth-file", str(f)])
    err = capsys.readouterr().err
    assert WARNING not in err and VISIBLE not in err
    assert no_launch[0]["auth"] == [("ann", "secret one"), ("bob", "p:w")]


def test_auth_from_the_environment(no_launch, capsys, monkeypatch):
    monkeypatch.setenv(app.AUTH_ENV, "ann:one, bob:two")
    app.main(["--share"])
    err = capsys.readouterr().err
    assert WARNING not in err and VISIBLE not in err
    assert no_launch[0]["auth"] == [("ann", "one"), ("bob", "two")]


@pytest.mark.parametrize("content", ["", "# only a comment\n", "nocolon\n", "user:\n"])
def test_bad_auth_file_exits_before_loading_anything(no_launch, monkeypatch, tmp_path, content):
    monkeypatch.setattr(Translator, "load", lambda *a, **k: pytest.fail("loaded a model despite a bad --auth-file"))
    f = tmp_path / "logins"
    f.write_text(content)
    with pytest.raises(SystemExit):
        app.main(["--share", "--auth-file", str(f)])
    with pytest.raises(SystemExit, match="cannot read"):
        app.main(["--auth-file", str(tmp_path / "missing")])
    assert no_launch == []


def test_no_share_no_warning(no_launch, capsys):
    app.main([])
    assert WARNING not in capsys.readouterr().err
    (kw,) = no_launch
    assert kw["share"] is False and kw["auth"] is None and kw["server_name"] == "127.0.0.1"


def test_bad_auth_exits_before_loading_anything(no_launch, monkeypatch):
    monkeypatch.setattr(Translator, "load", lambda *a, **k: pytest.fail("loaded a model despite a bad --auth"))
    with pytest.raises(SystemExit, match="user:password"):
        app.main(["--share", "--auth", "nocolon"])
    assert no_launch == []


def test_file_logins_are_enforced_by_the_server(tiny_trained, tmp_path):
    """The same check as above, for a login that came from --auth-file: wrong refused, right accepted."""
    f = tmp_path / "logins"
    f.write_text("ann:from-a-file\n")
    import argparse
    logins = app.read_logins(argparse.Namespace(auth_file=str(f), auth=None), environ={})
    tr = Translator.load(tiny_trained, device=DEVICE)
    with serve(tr, auth=logins) as url:
        assert login(url, "ann", "wrong").status_code in (400, 401, 422)
        assert login(url, "ann", "from-a-file").status_code == 200


def test_host_and_port_from_the_environment_as_a_space_sets_them(no_launch, monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    monkeypatch.setenv("GRADIO_SERVER_PORT", "7861")
    app.main([])
    assert no_launch[0]["server_name"] == "0.0.0.0" and no_launch[0]["server_port"] == 7861
    app.main(["--host", "127.0.0.2", "--port", "7862"])
    assert no_launch[1]["server_name"] == "127.0.0.2" and no_launch[1]["server_port"] == 7862


def test_main_sets_the_allocator_up_before_loading_the_model(no_launch, monkeypatch, tiny_translator):
    order = []
    monkeypatch.setattr(memory, "tune_allocator", lambda: order.append("tune_allocator") or {})
    monkeypatch.setattr(Translator, "load", lambda *a, **k: order.append("load") or tiny_translator)
    app.main([])
    assert order[0] == "tune_allocator" and set(order[1:]) == {"load"} and len(no_launch) == 1  # every model


# -- the --auth-file format: as Notepad writes it, passwords verbatim, no user twice, kept private ----------

def file_logins(tmp_path, data: bytes, mode: int = 0o600, environ=None, auth=None):
    import argparse
    f = tmp_path / "logins"
    f.write_bytes(data)
    f.chmod(mode)
    return app.read_logins(argparse.Namespace(auth_file=str(f), auth=auth), environ=environ or {})


def test_auth_file_with_a_byte_order_mark_and_windows_line_endings(tmp_path):
    data = "ann:one\r\nbob:two\r\n".encode("utf-8-sig")  # Notepad: BOM + CRLF
    assert data.startswith(b"\xef\xbb\xbf")
    assert file_logins(tmp_path, data) == [("ann", "one"), ("bob", "two")]


def test_auth_file_passwords_keep_their_spaces(tmp_path):
    data = b"ann:  two leading\nbob:two trailing  \r\ncid:\tx\t\n  # an indented comment\n   \n"
    assert file_logins(tmp_path, data) == [("ann", "  two leading"), ("bob", "two trailing  "), ("cid", "\tx\t")]


def test_auth_file_user_name_with_spaces_is_refused_naming_the_line(tmp_path):
    with pytest.raises(SystemExit, match=r"line 2: the user name ' bob'"):
        file_logins(tmp_path, b"ann:one\n bob:two\n")


@pytest.mark.parametrize("data,environ,auth", [(b"ann:one\nbob:x\nann:two\n", None, None),
                                               (b"ann:one\n", {app.AUTH_ENV: "bob:1, ann:2"}, None),
                                               (b"ann:one\n", None, "ann:one")])
def test_a_user_given_twice_is_refused(tmp_path, data, environ, auth):
    with pytest.raises(SystemExit, match=r"user 'ann' is given more than once"):
        file_logins(tmp_path, data, environ=environ, auth=auth)


def test_bad_auth_file_line_is_named(tmp_path):
    with pytest.raises(SystemExit, match=r"line 3: a login must look like user:password"):
        file_logins(tmp_path, b"# logins\nann:one\nbob\n")


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("mode,warns", [(0o600, False), (0o400, False), (0o640, True), (0o604, True), (0o644, True)])
def test_auth_file_readable_by_others_warns(tmp_path, capsys, mode, warns):
    assert file_logins(tmp_path, b"ann:one\n", mode=mode) == [("ann", "one")]
    err = capsys.readouterr().err
    assert (f"can be read by other users of this machine (mode {mode:03o})" in err) is warns, err


# -- ATTENTION_LENS_AUTH reads as the file does (issue 43 B7) ---------------------------------------------------

def env_logins(value: str):
    import argparse
    return app.read_logins(argparse.Namespace(auth_file=None, auth=None), environ={app.AUTH_ENV: value})


def test_environment_passwords_keep_their_spaces():
    """Spaces inside a password given in the variable are kept, as the file keeps them; only the space after a
    separating comma (before the next user) is layout."""
    assert env_logins("ann:two words,bob: lead,cid:trail ") == [("ann", "two words"), ("bob", " lead"),
                                                                ("cid", "trail ")]
    assert env_logins("ann:one, bob:two") == [("ann", "one"), ("bob", "two")]


def test_environment_logins_one_per_line_may_hold_commas():
    """With a newline in it the variable holds one login per line, read as the file's lines are (blank lines and
    # comments skipped, line endings removed, nothing else): a password may then hold a comma."""
    assert env_logins("ann:a,b c\r\n# the second\nbob:x, y \n\n") == [("ann", "a,b c"), ("bob", "x, y ")]
    with pytest.raises(SystemExit, match=rf"{app.AUTH_ENV}, line 2: the user name ' bob'"):
        env_logins("ann:one\n bob:two\n")
    with pytest.raises(SystemExit, match=rf"{app.AUTH_ENV}, line 1: a login must look like user:password"):
        env_logins("ann\nbob:two\n")


# -- a host other machines reach, without logins, warns as --share does (issue 43 B7) ---------------------------

@pytest.mark.parametrize("host,warns", [("0.0.0.0", True), ("::", True), ("192.168.1.20", True), ("example.org", True),
                                        ("127.0.0.1", False), ("127.0.0.2", False), ("localhost", False),
                                        ("::1", False)])
def test_a_host_other_machines_reach_without_logins_warns(no_launch, capsys, monkeypatch, host, warns):
    app.main(["--host", host])
    err = capsys.readouterr().err
    assert ("WARNING" in err and f"--host {host} without logins" in err) is warns, err
    assert no_launch[-1]["server_name"] == host
    monkeypatch.setenv(app.AUTH_ENV, "ann:one")
    app.main(["--host", host])
    assert "without logins" not in capsys.readouterr().err


def test_a_space_host_from_the_environment_without_logins_warns_too(no_launch, capsys, monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    app.main([])
    assert "--host 0.0.0.0 without logins" in capsys.readouterr().err
