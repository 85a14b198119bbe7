"""Fixtures for the demo page's browser test: a running server, headless Chromium, a REST helper.

scripts/browser-test.sh starts a real `bindery serve` on a free port with a fresh data directory and
passes its address in BINDERY_URL. Chromium runs headless (`--headless=new --no-sandbox
--disable-dev-shm-usage`, as CI runs as root without a TTY).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("BINDERY_SCREENSHOTS", ROOT / ".build"))


NO_BODY = object()  # a request without a body (None is sent as JSON null)


class Server:
    """The REST API, spoken with urllib (the test checks the page against the server's own answers)."""

    def __init__(self, url):
        self.url = url.rstrip("/")

    def request(self, method, path, body=NO_BODY):
        """`body` is sent as JSON (None as null); left out, nothing is sent."""
        data = None if body is NO_BODY else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                text = res.read().decode()
                return res.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            return e.code, (json.loads(text) if text else None)

    def get(self, path):
        status, body = self.request("GET", path)
        assert status == 200, f"GET {path}: {status} {body}"
        return body

    def put(self, path, body):
        status, answer = self.request("PUT", path, body)
        assert status == 200, f"PUT {path}: {status} {answer}"
        return answer

    def department_id(self, name):
        objects = self.get("/objects/Department?keys=name")["objects"]
        return next(o["$id"] for o in objects if o["name"] == name)

    def employees_of(self, department_name):
        dep = self.department_id(department_name)
        return [e for e in self.get("/objects/Employee")["objects"] if e["department"] == {"$ref": dep}]

    def employee_named(self, first, last):
        objects = self.get("/objects/Employee?keys=firstName,lastName")["objects"]
        return next(o["$id"] for o in objects if o["firstName"] == first and o["lastName"] == last)


@pytest.fixture(scope="session")
def start_server():
    """Starts extra servers (e.g. with a tiny change history) from BINDERY_BINARY; stops them at the end.

    `start_server(*args)` answers a Server; `start_server.stop(server)` stops it (SIGTERM) and
    `start_server.restart(server)` starts it again on the same port and data directory.
    """
    started = []

    def launch(args, data, port):
        binary = os.environ.get("BINDERY_BINARY") or str(ROOT / ".build/debug/bindery")
        proc = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--data", data,
             "--fixture", str(ROOT / "Fixtures/employees"), "--public", str(ROOT / "Public"), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        started.append((proc, data))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            match = re.search(r"listening on (http://\S+)", line or "")
            if match:
                server = Server(match.group(1))
                server.proc, server.data, server.args = proc, data, args
                return server
            if not line and proc.poll() is not None:
                break
        pytest.fail(f"{binary} did not start")

    def stop(server):
        server.proc.terminate()
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()

    def start(*args):
        return launch(args, tempfile.mkdtemp(prefix="bindery-browser-"), 0)

    def restart(server):
        if server.proc.poll() is None:
            stop(server)
        again = launch(server.args, server.data, urllib.parse.urlsplit(server.url).port)
        assert again.url == server.url
        server.proc = again.proc
        return server

    start.stop = stop
    start.restart = restart
    yield start
    for proc, data in started:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def server():
    url = os.environ.get("BINDERY_URL")
    if not url:
        pytest.fail("BINDERY_URL is not set: run scripts/browser-test.sh, which starts a server")
    return Server(url)


def _chromium_paths():
    binary = os.environ.get("CHROMIUM_BINARY") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver")
    if not binary or not driver:
        pytest.fail("chromium and chromedriver are needed: bash scripts/install-deps.sh chromium chromium-driver")
    return binary, driver


def new_browser(width=1440, height=960):
    binary, driver = _chromium_paths()
    options = Options()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--disable-extensions",
        "--no-first-run",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
        "--force-device-scale-factor=1",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    browser.set_page_load_timeout(20)
    browser.set_script_timeout(10)
    return browser


@pytest.fixture(scope="session")
def browser():
    b = new_browser()
    yield b
    b.quit()


@pytest.fixture(scope="session")
def second_browser():
    b = new_browser()
    yield b
    b.quit()


@pytest.fixture(scope="session")
def screenshots():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
