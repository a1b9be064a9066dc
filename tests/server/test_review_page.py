"""The review page, in a real headless Chromium, on a real ``langgraph dev``.

The server runs the project's langgraph.json (``http.app`` mounts the page); the browser is
the distribution's Chromium driven by Selenium through the distribution's chromedriver, so
nothing is downloaded. Threads are started through langgraph-sdk, as any client starts
them, and what the page did is checked through the SDK and the project's own ``Workflow``.
"""

from __future__ import annotations

import asyncio
import html
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import HumanRequest, ResearchBundle, RunOutcome, TaskSpec, TaskState
from graphs.human import request_in
from tests.conftest import OBJECTIVE
from tests.server.conftest import RunningServer, cli_in, served, start, waiting

pytestmark = [
    pytest.mark.server,
    pytest.mark.sqlite,
    pytest.mark.xdist_group("review-page"),  # one server and one browser for the module
]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
MARKUP = "<script>alert(1)</script>"
WAIT_SECONDS = 30
CORPUS = {
    "stone.md": (
        "# The Rosetta Stone\n\n"
        "The Rosetta Stone carries one decree in three scripts, and scholars wrote <b>bold</b> "
        "notes about Egyptian hieroglyphs on it.\n\n"
        f"The decipherment of Egyptian hieroglyphs began when Thomas Young read the Rosetta "
        f"Stone {MARKUP} cartouches.\n\n"
        "Champollion deciphered Egyptian hieroglyphs in 1822 by comparing the Greek text of the "
        "Rosetta Stone with its hieroglyphic names.\n"
    )
}
"""A corpus whose sentences carry markup, in a folder of the server's (a corpus root)."""


@pytest.fixture(scope="module")
def review_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``langgraph dev`` on SQLite in a folder holding the markup corpus."""
    folder = tmp_path_factory.mktemp("review")
    corpus = folder / "corpus"
    corpus.mkdir()
    for name, text in CORPUS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    with served("sqlite", folder) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """Headless Chromium from the distribution, through its own chromedriver."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "Chromium and chromedriver are not installed (apt-get install chromium "
            "chromium-driver; .ci/run installs them)"
        )
    options = Options()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(argument)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SE_OFFLINE", "true")  # Selenium Manager never downloads a driver
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    driver.implicitly_wait(WAIT_SECONDS)  # a page after a click: found once it has loaded
    try:
        yield driver
    finally:
        driver.quit()


def started(server: RunningServer, task: TaskSpec) -> tuple[str, HumanRequest]:
    """A thread of the served graph, run with ``task`` until it waits for a person."""

    async def run() -> tuple[str, HumanRequest]:
        client = get_client(url=server.url)
        thread_id = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread_id, GRAPH_ID, input={"task": task.model_dump(mode="json")})
        [pending] = (await client.threads.get_state(thread_id))["interrupts"]
        return thread_id, request_in(pending["value"])

    return asyncio.run(run())


def approval_thread(server: RunningServer, task_id: str) -> tuple[str, HumanRequest]:
    """A thread waiting for the research approval (``policies.require_approval``)."""
    return asyncio.run(start(get_client(url=server.url), task_id))


def server_thread(server: RunningServer, thread_id: str) -> dict[str, Any]:
    """The server's record of the thread (its status) and its state, through the SDK."""

    async def read() -> dict[str, Any]:
        client = get_client(url=server.url)
        thread = await client.threads.get(thread_id)
        return {"status": thread["status"], "state": await client.threads.get_state(thread_id)}

    return asyncio.run(read())


def still_waiting(server: RunningServer, thread_id: str, request: HumanRequest) -> None:
    """The thread waits on the same request, and the server never saw a run fail on it."""
    assert asyncio.run(waiting(get_client(url=server.url), thread_id)) == request
    assert server_thread(server, thread_id)["status"] == "interrupted"


def shown_state(browser: WebDriver) -> str:
    """The state the thread page shows, or a failure naming what the page says instead."""
    states = browser.find_elements(By.ID, "state")
    assert states, browser.find_element(By.TAG_NAME, "body").text
    return str(states[0].text)


def open_thread(browser: WebDriver, server: RunningServer, thread_id: str) -> None:
    browser.get(f"{server.url}/review/threads/{thread_id}")
    assert browser.find_element(By.TAG_NAME, "h1").text == f"Thread {thread_id}"


def test_a_waiting_thread_is_listed_and_opens_its_request(
    review_server: RunningServer, browser: WebDriver
) -> None:
    thread_id, request = approval_thread(review_server, "review-listed")
    browser.get(f"{review_server.url}/review")
    row = browser.find_element(By.XPATH, f"//table[@id='waiting']//tr[td/a[.='{thread_id}']]")
    assert request.request_kind in row.text and request.question in row.text
    row.find_element(By.LINK_TEXT, thread_id).click()
    assert browser.find_element(By.CSS_SELECTOR, "#request h2").text == request.question
    buttons = browser.find_elements(By.CSS_SELECTOR, "#decide button[name=action]")
    assert [button.get_attribute("value") for button in buttons] == request.allowed_actions
    facts = browser.find_elements(By.CSS_SELECTOR, "#facts a.fact")
    assert [link.text for link in facts] == [fact.claim_id for fact in request.top_facts]


def test_a_citation_in_the_draft_opens_its_passage_marked_in_the_verified_snapshot(
    review_server: RunningServer, browser: WebDriver
) -> None:
    task = TaskSpec(task_id="review-cited", objective=OBJECTIVE, policies={"export_article": True})
    thread_id, request = started(review_server, task)
    assert request.request_kind == "confirm_write", "it waits after publishing, with a draft"
    open_thread(browser, review_server, thread_id)
    citation = browser.find_element(By.CSS_SELECTOR, "#draft a.cite")
    claim_id = citation.text.strip("[]")
    assert re.fullmatch(r"claim-[0-9]+", claim_id), citation.text
    citation.click()

    with Workflow(review_server.settings) as workflow:
        research: ResearchBundle = workflow.state(thread_id)["research"]
    fact = research.fact(claim_id)
    assert fact is not None
    source = research.source(fact.source_id)
    assert source is not None
    passage = browser.find_element(By.CSS_SELECTOR, f"#snapshot mark[id='{claim_id}']")
    assert browser.current_url.endswith(
        f"/review/threads/{thread_id}/sources/{source.id}#{claim_id}"
    )
    assert passage.text == fact.quote
    assert passage.value_of_css_property("outline-style") == "solid", "the cited one stands out"
    assert f"sha256 {source.sha256} (verified)" in browser.find_element(By.TAG_NAME, "body").text


def test_approving_on_the_page_completes_the_thread(
    review_server: RunningServer, browser: WebDriver
) -> None:
    thread_id, _ = approval_thread(review_server, "review-approved")
    open_thread(browser, review_server, thread_id)
    browser.find_element(By.CSS_SELECTOR, "#decide-approve input[name=decided_by]").send_keys(
        "editor@example.org"
    )
    browser.find_element(By.CSS_SELECTOR, "#decide-approve button").click()

    assert shown_state(browser) == TaskState.COMPLETED.value
    served = server_thread(review_server, thread_id)
    assert served["status"] == "idle" and served["state"]["next"] == []
    outcome = RunOutcome.model_validate(served["state"]["values"]["outcome"])
    assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
    with Workflow(review_server.settings) as workflow:
        [decision] = workflow.state(thread_id)["decisions"].decisions
    assert (decision.action, decision.decided_by) == ("approve", "editor@example.org")
    article = browser.find_element(By.ID, "article").get_attribute("href")
    assert article == f"{review_server.url}/threads/{thread_id}/artifacts/article"


def test_rejecting_without_a_reason_is_refused_on_the_page_and_the_thread_still_waits(
    review_server: RunningServer, browser: WebDriver
) -> None:
    thread_id, request = approval_thread(review_server, "review-no-reason")
    with Workflow(review_server.settings) as workflow:
        checkpoints = workflow.checkpoint_count(thread_id)
    open_thread(browser, review_server, thread_id)
    browser.find_element(By.CSS_SELECTOR, "#decide-reject button").click()

    refusal = browser.find_element(By.CSS_SELECTOR, ".refused").text
    assert browser.find_element(By.TAG_NAME, "h1").text == "Decision refused"
    assert "reason" in refusal and "nothing was changed" in refusal, refusal
    still_waiting(review_server, thread_id, request)
    with Workflow(review_server.settings) as workflow:
        assert workflow.checkpoint_count(thread_id) == checkpoints

    browser.find_element(By.LINK_TEXT, "Back to the thread").click()
    browser.find_element(By.CSS_SELECTOR, "#decide-reject textarea[name=reason]").send_keys(
        "The sources are about the Parthenon."
    )
    browser.find_element(By.CSS_SELECTOR, "#decide-reject button").click()
    assert shown_state(browser) == TaskState.REJECTED.value


def test_markup_in_a_corpus_sentence_is_shown_as_text(
    review_server: RunningServer, browser: WebDriver
) -> None:
    task = TaskSpec(
        task_id="review-markup",
        objective=OBJECTIVE,
        corpus=["corpus"],  # the server's folder is a corpus root
        policies={"require_approval": True},
    )
    thread_id, request = started(review_server, task)
    with Workflow(review_server.settings) as workflow:
        research: ResearchBundle = workflow.state(thread_id)["research"]
    [quoting] = [fact for fact in research.facts if MARKUP in fact.quote]
    assert any(fact.claim_id == quoting.id for fact in request.top_facts)
    open_thread(browser, review_server, thread_id)
    browser.find_element(By.CSS_SELECTOR, f"#facts a[href$='#{quoting.id}']").click()

    passage = browser.find_element(By.CSS_SELECTOR, f"mark[id='{quoting.id}']")
    assert MARKUP in passage.text and passage.text == quoting.quote
    snapshot = browser.find_element(By.ID, "snapshot")
    assert "wrote <b>bold</b> notes" in snapshot.text
    made = str(snapshot.get_attribute("innerHTML"))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in made and "&lt;b&gt;bold" in made
    assert "<script" not in browser.page_source and "<b>" not in made, "no element was made"
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018  # reading it is what raises


def post_form(
    server: RunningServer, thread_id: str, fields: dict[str, str], headers: dict[str, str]
) -> tuple[int, str]:
    """POST a form to the thread's decision route; the status and the page, unescaped."""
    request = urllib.request.Request(
        f"{server.url}/review/threads/{thread_id}/decision",
        data=urllib.parse.urlencode(fields).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, html.unescape(response.read().decode())
    except urllib.error.HTTPError as error:
        return error.code, html.unescape(error.read().decode())


def test_a_cross_site_post_is_refused_with_403_and_changes_nothing(
    review_server: RunningServer, browser: WebDriver
) -> None:
    thread_id, request = approval_thread(review_server, "review-cross-site")
    with urllib.request.urlopen(f"{review_server.url}/review/threads/{thread_id}") as page:
        token_field = re.search(r'name="token" value="([0-9a-f]{64})"', page.read().decode())
    assert token_field is not None
    approve = {"token": token_field[1], "interrupt_id": request.interrupt_id, "action": "approve"}
    own = {"Origin": review_server.url}
    foreign = {"Origin": "https://evil.example"}
    for fields, headers, why in (
        (approve, foreign, "Origin 'https://evil.example' is not this server"),
        (approve, {"Origin": "http://localhost:1"}, "is not this server"),
        (approve, {"Referer": "https://evil.example/page"}, "Referer"),
        (approve, {}, "neither an Origin nor a Referer"),
        ({**approve, "token": ""}, own, "form token"),
        ({**approve, "token": "0" * 64}, own, "form token"),
    ):
        status, text = post_form(review_server, thread_id, fields, headers)
        assert status == 403 and why in text and "nothing was changed" in text, (headers, text)
        still_waiting(review_server, thread_id, request)

    # A page of another site that posts the form: the browser sends its Origin (null here).
    action = f"{review_server.url}/review/threads/{thread_id}/decision"
    hidden = "".join(
        f'<input type="hidden" name="{name}" value="{value}">' for name, value in approve.items()
    )
    form = f'<form method="post" action="{action}">{hidden}<button>go</button></form>'
    browser.get(f"data:text/html,{urllib.parse.quote(form)}")
    browser.find_element(By.TAG_NAME, "button").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "Cross-site post refused"
    still_waiting(review_server, thread_id, request)

    status, text = post_form(review_server, thread_id, approve, own)  # from its own origin
    assert status == 200 and TaskState.COMPLETED.value in text, text  # after the redirect


def test_a_thread_the_cli_started_is_answered_through_the_server_when_its_id_is_a_uuid(
    review_server: RunningServer,
) -> None:
    served_id, other_id = str(uuid.uuid4()), "cli-made"
    for thread_id in (served_id, other_id):
        run = ("run", OBJECTIVE, "--thread", thread_id, "--require-approval")
        code, output = asyncio.run(cli_in(review_server.folder, *run))
        assert code == 3, output  # waiting for a decision
    with urllib.request.urlopen(f"{review_server.url}/review") as listed:
        shown = listed.read().decode()
    assert f'href="/review/threads/{served_id}"' in shown
    assert f'href="/review/threads/{other_id}"' in shown

    with urllib.request.urlopen(f"{review_server.url}/review/threads/{other_id}") as page:
        text = html.unescape(page.read().decode())
    assert "<form" not in text and f"`handoff resume {other_id}`" in text

    with urllib.request.urlopen(f"{review_server.url}/review/threads/{served_id}") as page:
        form = page.read().decode()
    fields = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', form))
    approve = {**fields, "action": "approve"}
    status, text = post_form(review_server, served_id, approve, {"Origin": review_server.url})
    assert status == 200 and TaskState.COMPLETED.value in text, text
    assert server_thread(review_server, served_id)["status"] == "idle", "the server ran it"
    with Workflow(review_server.settings) as workflow:
        assert workflow.outcome(served_id).state == TaskState.COMPLETED
