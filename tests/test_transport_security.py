from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
import zmq
from fake_driver import FakeDriver, wait_until

from limbtree.transport import (
    AgentUnreachableError,
    KeysError,
    LimbAgent,
    LimbClient,
    RequestTimeoutError,
    generate_keys,
    ping_endpoint,
)
from limbtree.transport.security import load_agent_keys, load_client_keys

pytestmark = [
    pytest.mark.timeout(30),
    pytest.mark.skipif(not zmq.has("curve"), reason="libzmq without CURVE"),
]

MakeAgent = Callable[..., LimbAgent]
MakeClient = Callable[..., LimbClient]


def test_generate_keys_writes_the_documented_layout(tmp_path: Path) -> None:
    files = generate_keys(tmp_path / "keys")
    root = tmp_path / "keys"
    for name in (
        "agent.key",
        "agent.key_secret",
        "client.key",
        "client.key_secret",
        "authorized/client.key",
    ):
        assert (root / name).is_file(), name
    assert (root / "authorized/client.key").read_bytes() == files.client_public.read_bytes()
    for secret in (files.agent_secret, files.client_secret):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("name", "load"), [("agent", load_agent_keys), ("client", load_client_keys)]
)
def test_a_secret_key_open_to_other_users_is_refused_naming_the_fix(
    tmp_path: Path, name: str, load: Callable[[Path], object]
) -> None:
    # (a reviewer's agent started silently on an agent.key_secret of mode 0644)
    generate_keys(tmp_path)
    secret = tmp_path / f"{name}.key_secret"
    secret.chmod(0o644)
    with pytest.raises(KeysError, match=rf"mode 0644.*chmod 600 {secret}"):
        load(tmp_path)
    secret.chmod(0o600)
    load(tmp_path)


def test_generate_keys_refuses_to_overwrite_unless_told(tmp_path: Path) -> None:
    first_public = generate_keys(tmp_path).agent_public.read_bytes()
    with pytest.raises(KeysError, match="exists"):
        generate_keys(tmp_path)
    second = generate_keys(tmp_path, overwrite=True)
    assert second.agent_public.read_bytes() != first_public
    assert load_agent_keys(tmp_path)[0].public == load_client_keys(tmp_path).server_public


def test_limbtree_keys_generate_says_how_to_replace_keys_and_does_with_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from limbtree.trees.cli import main

    assert main(["keys", "generate", str(tmp_path)]) == 0
    first = (tmp_path / "agent.key").read_bytes()
    assert main(["keys", "generate", str(tmp_path)]) == 1
    assert "key file exists; limbtree keys generate --overwrite" in capsys.readouterr().err
    assert (tmp_path / "agent.key").read_bytes() == first
    assert main(["keys", "generate", str(tmp_path), "--overwrite"]) == 0
    assert (tmp_path / "agent.key").read_bytes() != first


def test_missing_key_files_are_named_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(KeysError) as info:
        LimbClient("tcp://127.0.0.1:5555", keys_dir=tmp_path)
    assert "client.key_secret" in str(info.value)
    assert "limbtree keys generate" in str(info.value)
    # A client's keys are copied from the agent's folder: new ones would not match its own.
    assert "copy it from the folder `limbtree keys generate` made for the agent" in str(info.value)
    assert "make keys with" not in str(info.value)
    with pytest.raises(KeysError, match=r"agent\.key_secret"):
        LimbAgent(FakeDriver(), "tcp://127.0.0.1:5555", keys_dir=tmp_path)


def test_limbtree_ping_with_the_runners_keys_missing_a_file_says_to_copy_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The runner's copy of the keys lacks agent.key, or --keys names a file in the folder."""
    from limbtree.trees.cli import main

    agent_side, runner_side = tmp_path / "agent", tmp_path / "runner"
    generate_keys(agent_side)
    runner_side.mkdir()
    (runner_side / "client.key_secret").write_bytes((agent_side / "client.key_secret").read_bytes())
    (runner_side / "client.key_secret").chmod(0o600)
    # (nothing listens on ipc in tmp_path: the keys are read before anything is sent)
    endpoint = f"ipc://{tmp_path / 'nobody'}"
    assert main(["ping", endpoint, "--keys", str(runner_side)]) == 1
    err = capsys.readouterr().err
    assert f"{runner_side / 'agent.key'}: no such key file; copy it from the folder" in err
    assert "generated anew here would not match the agent's" in err
    assert main(["ping", endpoint, "--keys", str(runner_side / "client.key_secret")]) == 1
    err = capsys.readouterr().err
    assert f"{runner_side / 'client.key_secret'}: is not a folder; give the keys folder" in err
    assert "client.key_secret/client.key_secret" not in err


def test_key_repr_hides_the_secret(tmp_path: Path) -> None:
    generate_keys(tmp_path)
    keys = load_client_keys(tmp_path)
    assert keys.secret.decode() not in repr(keys)


def test_curve_agent_serves_a_client_with_an_authorised_key(
    make_agent: MakeAgent, make_client: MakeClient, tmp_path: Path
) -> None:
    generate_keys(tmp_path)
    driver = FakeDriver()
    agent = make_agent(driver, clock="real", stream_rate_hz=200, keys_dir=tmp_path)
    assert agent.curve
    assert "CURVE on (1 authorised client key)" in agent.summary()  # (not "1 ... keys")
    client = make_client(agent.request_endpoint, keys_dir=tmp_path)
    assert client.describe(timeout_s=5).curve is True
    client.command("joint_position", q=[0.1, 0.1, 0.1], timeout_s=5)
    assert driver.commands
    assert wait_until(lambda: client.poll() or client.state is not None, 5)
    rtt, info = ping_endpoint(agent.request_endpoint, timeout_s=5, keys_dir=tmp_path)
    assert info.curve and rtt > 0


def test_curve_agent_ignores_a_client_without_keys(
    make_agent: MakeAgent, make_client: MakeClient, tmp_path: Path
) -> None:
    generate_keys(tmp_path)
    driver = FakeDriver()
    agent = make_agent(driver, clock="real", stream_rate_hz=200, keys_dir=tmp_path)
    client = make_client(agent.request_endpoint)
    for _ in range(20):
        client.send_command("joint_position", q=[1.0, 1.0, 1.0])
    with pytest.raises(RequestTimeoutError):
        client.describe(timeout_s=0.3)
    assert not wait_until(lambda: client.poll() or client.state is not None, 0.3)
    assert driver.commands == []


def test_curve_agent_ignores_a_client_whose_key_is_not_authorised(
    make_agent: MakeAgent, make_client: MakeClient, tmp_path: Path
) -> None:
    generate_keys(tmp_path / "agent")
    generate_keys(tmp_path / "intruder")
    # The intruder knows the agent's public key but holds a key pair the agent never saw.
    (tmp_path / "intruder/agent.key").write_bytes((tmp_path / "agent/agent.key").read_bytes())
    driver = FakeDriver()
    agent = make_agent(driver, clock="real", stream_rate_hz=200, keys_dir=tmp_path / "agent")
    intruder = make_client(agent.request_endpoint, keys_dir=tmp_path / "intruder")
    for _ in range(20):
        intruder.send_command("joint_position", q=[1.0, 1.0, 1.0])
    with pytest.raises(RequestTimeoutError):
        intruder.describe(timeout_s=0.3)
    assert not wait_until(lambda: intruder.poll() or intruder.state is not None, 0.3)
    assert driver.commands == []
    with pytest.raises(AgentUnreachableError, match="authorized"):
        ping_endpoint(agent.request_endpoint, timeout_s=0.3, keys_dir=tmp_path / "intruder")


def test_a_plain_agent_does_not_talk_to_a_curve_client(
    make_agent: MakeAgent, make_client: MakeClient, tmp_path: Path
) -> None:
    generate_keys(tmp_path)
    agent = make_agent(FakeDriver(), clock="sim")
    with pytest.raises(RequestTimeoutError):
        make_client(agent.request_endpoint, keys_dir=tmp_path).ping(timeout_s=0.3)
    assert make_client(agent.request_endpoint).ping(timeout_s=5) > 0


@pytest.mark.parametrize(
    ("stray", "complaint"),
    [
        ("notes", "not a ZeroMQ certificate file"),
        ('public-key = "abc"\n', "is not a CURVE key"),
        (None, "is not a file"),
    ],
)
def test_a_stray_file_in_authorized_is_refused_naming_it(
    make_agent: MakeAgent, tmp_path: Path, stray: str | None, complaint: str
) -> None:
    # (a reviewer's agent started with "CURVE on (2 authorised client keys)" after one
    # garbage authorized/notes.key: zmq.auth gave up on the whole folder, and the agent then
    # answered no client at all, its authorised one included, with no word of why)
    generate_keys(tmp_path)
    bad = tmp_path / "authorized" / "notes.key"
    if stray is None:
        bad.mkdir()
    else:
        bad.write_text(stray)
    with pytest.raises(KeysError) as info:
        make_agent(FakeDriver(), clock="real", stream_rate_hz=200, keys_dir=tmp_path)
    assert str(bad) in str(info.value)
    assert complaint in str(info.value)
    assert "move it out of the folder" in str(info.value)
    if bad.is_dir():
        bad.rmdir()
    else:
        bad.unlink()
    agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=200, keys_dir=tmp_path)
    rtt, info_ok = ping_endpoint(agent.request_endpoint, timeout_s=5, keys_dir=tmp_path)
    assert info_ok.curve and rtt > 0


def test_an_authorized_folder_without_keys_is_refused_saying_what_to_copy(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    # (a reviewer's agent on an empty authorized/ started, "CURVE on (0 authorised client
    # keys)", and answered nobody until restarted with a key there)
    generate_keys(tmp_path)
    (tmp_path / "authorized" / "client.key").rename(tmp_path / "authorized" / "client.pub")
    with pytest.raises(KeysError) as info:
        make_agent(FakeDriver(), clock="real", stream_rate_hz=200, keys_dir=tmp_path)
    message = str(info.value)
    assert f"{tmp_path / 'authorized'}: holds no client public key (no *.key file)" in message
    assert "named NAME.key" in message


@pytest.mark.parametrize("inside", ["", "k"])
def test_limbtree_keys_generate_into_a_file_says_so_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], inside: str
) -> None:
    # (a reviewer's `limbtree keys generate afile` and `... afile/k` ended in tracebacks,
    # FileExistsError and NotADirectoryError)
    from limbtree.trees.cli import main

    a_file = tmp_path / "afile"
    a_file.write_text("not a folder")
    target = a_file / inside if inside else a_file
    assert main(["keys", "generate", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"limbtree keys: {a_file if not inside else target}: cannot write")
    assert "give a folder this user may create or write, not a file" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_generated_secret_key_is_private_from_its_creation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overwrite: bool
) -> None:
    # (zmq.auth wrote each secret key file with the default mode, 0644 under the usual umask,
    # and limbtree chmod-ed it to 0600 after: the secret was readable by every user in
    # between; with --overwrite over a copied 0644 file, too)
    import limbtree.transport.security as security

    if overwrite:
        generate_keys(tmp_path)
        for name in ("agent.key_secret", "client.key_secret"):
            (tmp_path / name).chmod(0o644)

    def no_chmod(path: object, mode: int) -> None:
        raise AssertionError(f"the secret key file {path} was made private only after")

    monkeypatch.setattr(security.os, "chmod", no_chmod)
    old_umask = os.umask(0o022)
    try:
        files = generate_keys(tmp_path, overwrite=overwrite)
    finally:
        os.umask(old_umask)
    monkeypatch.undo()
    for secret in (files.agent_secret, files.client_secret):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.agent_public.stat().st_mode) == 0o644
    keys, _ = load_agent_keys(tmp_path)
    assert keys.public == load_client_keys(tmp_path).server_public
    assert zmq.auth.load_certificate(files.client_secret)[1] == load_client_keys(tmp_path).secret
