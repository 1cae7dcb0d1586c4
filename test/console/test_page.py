"""The console's page in a real browser (Debian's headless Chromium through Selenium) against the real system.

The language server (scripted model) and the dispatcher (simulated Spot) run in this process over the
small synthetic scene on FalkorDB, as in test/client/test_system.py; the console's server runs under
uvicorn in a thread. The page is read through its DOM: ``#map-stats`` says what the map holds and drew,
so no test reads pixels. Each state is saved as a screenshot under the test's tmp dir and copied to
``out/console-screenshots/``.
"""
from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rclpy
import spark_dsg
from heracles_ros.msg import MirrorStatus
from hydra_msgs.msg import DsgUpdate
from rclpy.parameter import Parameter
from support.changed_map import change_map
from support.console_server import console_server
from support.history_scene import MOVED_FROM, MOVED_TO, changed_scene
from support.ros import Collector, qos, ros_session, spinning, wait_for_subscribers, wait_until
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, say
from support.tiny_scene import tiny_scene

from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.mirror.additions import Additions
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.dsg_mirror import DsgMirrorNode
from heracles_ros.nodes.language_server import LanguageServerNode

pytestmark = [pytest.mark.backends("falkordb"), pytest.mark.timeout(240)]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
    pytest.skip(f"no {CHROMIUM} and {CHROMEDRIVER} (./run.sh test installs Debian's chromium and chromium-driver)",
                allow_module_level=True)

from selenium import webdriver  # noqa: E402  (only once the browser is known to be there)
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

NS = "/spotp"
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "out" / "console-screenshots"
START = "P0"
NEAREST = "pick up the box nearest the bicycle"
AMBIGUOUS = "bring me a box"
HOSTILE = '<img src=x onerror="window.__hostile=1;alert(1)">'
NEAREST_BOX = (
    "MATCH (b:Object {class: 'bicycle'}), (o:Object {class: 'box'}) RETURN o.nodeSymbol AS box "
    "ORDER BY (o.x - b.x) * (o.x - b.x) + (o.y - b.y) * (o.y - b.y), box LIMIT 1"
)
BOXES = "MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS box ORDER BY box"
#: Two boxes the robot can reach (the storage room, x >= 12, is not), for the clarification.
TWO_BOXES = (
    "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'box'}) WHERE p.x < 12 "
    "RETURN o.nodeSymbol AS box ORDER BY box LIMIT 2"
)
WAIT_S = 60.0


def request_of(request: RecordedRequest) -> tuple[str, str]:
    """The conversation's latest request: (Question or Instruction, its text)."""
    for message in reversed(request.messages):
        found = re.match(r"(Question|Instruction): (.*)", str(message.get("content")), re.S)
        if message.get("role") == "user" and found:
            return found.group(1), found.group(2)
    return "", ""


def model_for(two_boxes: list[str]) -> Callable[[RecordedRequest], Turn]:
    """The nearest box by a query; "a box" by a clarification between two boxes; "(I mean O3)" by O3; a question
    by counting the boxes."""

    def model(request: RecordedRequest) -> Turn:
        kind, instruction = request_of(request)
        if kind == "Question":  # how many boxes
            if request.last().get("role") != "tool":
                return call(BOXES)
            return say(f"I counted the rows.\n<answer>{len(json.loads(request.tool_results()[-1]))}</answer>")
        if (meant := re.search(r"\(I mean (O\d+)\)", instruction)) is not None:
            return say(f"<answer>(holding {meant.group(1)})</answer>")
        if AMBIGUOUS in instruction:
            return say(f'<answer>CLARIFY("Which box do you mean?", <{", ".join(two_boxes)}>)</answer>')
        if request.last().get("role") != "tool":
            return call(NEAREST_BOX)
        return say(f"<answer>(holding {json.loads(request.tool_results()[-1])[0]['box']})</answer>")

    return model


@pytest.fixture
def overlay(small_store) -> dict[str, Any]:
    """Written before the console reads the scene: a plant whose class an operator's correction set to markup,
    and a fire extinguisher an operator added near the start place."""
    symbol = small_store.query("MATCH (o:Object {class: 'plant'}) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")[0]["s"]
    Corrections(small_store).apply([(symbol, "class", HOSTILE)], author="mallory")
    x, y, _ = RobotStateStore(small_store).position_of(START)
    additions = Additions(small_store)
    problems, checked, _ = additions.check([{"add": "fire extinguisher", "at": [x + 0.6, y + 0.6, 0.4]}])
    assert not problems, problems
    added = additions.add(checked, author="dana", request="there is a fire extinguisher here")
    return {"hostile": str(symbol), "added": added[0].symbol, "added_at": (x + 0.6, y + 0.6)}


@pytest.fixture
def console(ros_domain_id, falkordb_uri, graph_name, small_store, overlay) -> Iterator[dict[str, Any]]:
    """Language server, dispatcher and the console's server in NS over the small scene."""
    states = RobotStateStore(small_store)
    states.write(RobotState(states.position_of(START), place=START))
    two_boxes = [row["box"] for row in small_store.query(TWO_BOXES)]
    with ExitStack() as stack:
        llm = ScriptedLLMServer(model_for(two_boxes)).start()
        stack.callback(llm.stop)
        stack.enter_context(ros_session(ros_domain_id))
        db = {"db_uri": falkordb_uri, "graph_name": graph_name}
        language = LanguageServerNode(namespace=NS, parameter_overrides=[
            Parameter(k, value=v) for k, v in {**db, "llm": "openai", "model": llm.model,
                                               "base_url": llm.openai_base_url, "instance_check_s": 0.0}.items()])
        robot = DispatcherNode(namespace=NS, parameter_overrides=[
            Parameter(k, value=v) for k, v in {**db, "start_place": START, "sim_time_scale": 1.0,
                                               "sim_speed_mps": 0.5}.items()])
        stack.enter_context(spinning(language, robot, num_threads=8))
        wait_until(lambda: language.commands.plans.server_is_ready(), 20.0, "the dispatcher's execute_plan")
        served = stack.enter_context(console_server(NS, falkordb_uri, graph_name, find_timeout_s=20.0))
        yield {"url": served.base + "/", "store": small_store, "two_boxes": two_boxes, "db": db, **overlay}


@pytest.fixture
def browser(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Page]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(CHROMEDRIVER, log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.set_page_load_timeout(30)
        driver.set_script_timeout(30)
        yield Page(driver, tmp_path, request.node.name.split("[")[0].removeprefix("test_"))
    finally:
        driver.quit()


class Page:
    """The console in the browser: bounded waits on its DOM, screenshots of its states."""

    def __init__(self, driver: WebDriver, tmp_path: Path, name: str):
        self.driver = driver
        self.tmp_path = tmp_path
        self.name = name

    def open(self, url: str) -> None:
        self.driver.get(url)
        self.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "ready",
                   "the page's WebSocket to open")

    def until(self, condition: Callable[[WebDriver], Any], what: str, timeout_s: float = WAIT_S) -> Any:
        return WebDriverWait(self.driver, timeout_s, poll_frequency=0.1).until(
            condition, f"waited {timeout_s:g} s for {what}")

    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def visible(self, css: str, what: str = "") -> WebElement:
        def shown(driver: WebDriver) -> WebElement | bool:
            found = driver.find_elements(By.CSS_SELECTOR, css)
            return found[0] if found and found[0].is_displayed() else False

        return self.until(shown, what or css)

    def stats(self) -> dict[str, str]:
        """``#map-stats``'s data attributes: what the map holds and what its last frame drew."""
        return self.driver.execute_script("return Object.assign({}, document.getElementById('map-stats').dataset)")

    def attribute(self, css: str, name: str) -> str | None:
        """An attribute read in one step in the page (a list re-rendered between a find and a read is no error)."""
        found = self.driver.execute_script("const e = document.querySelector(arguments[0]);"
                                           "return e && e.getAttribute(arguments[1]);", css, name)
        return None if found is None else str(found)

    def click_at(self, x: float, y: float) -> None:
        """A click on the map at (x, y) metres, through the view the page reports."""
        cx, cy, scale = (float(v) for v in self.stats()["view"].split(","))
        ActionChains(self.driver).move_to_element_with_offset(
            self.find("#map"), round((x - cx) * scale), round(-(y - cy) * scale)).click().perform()

    def type(self, text: str, button: str) -> None:
        box = self.find("#instruction")
        box.clear()
        box.send_keys(text)
        self.find(button).click()

    def last(self, css: str) -> WebElement:
        return self.driver.find_elements(By.CSS_SELECTOR, css)[-1]

    def command_entry(self, nth: int) -> WebElement:
        """The ``nth`` (0-based) command of the conversation, once it exists."""
        return self.until(lambda d: (found := d.find_elements(By.CSS_SELECTOR, "#log > li.command")) and
                          len(found) > nth and found[nth], f"command {nth} in the conversation")

    def shot(self, state: str) -> Path:
        path = self.tmp_path / f"{self.name}-{state}.png"
        assert self.driver.save_screenshot(str(path)), f"no screenshot of {state}"
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SHOTS / path.name)
        return path

    def script_errors(self) -> list[str]:
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]


def count(store, label: str) -> int:
    return int(store.query(f"MATCH (n:{label}) RETURN count(n) AS n")[0]["n"])


def state_of(entry: WebElement) -> str:
    return entry.get_attribute("data-state") or ""


def robot_at(page: Page) -> tuple[float, float] | None:
    stats = page.stats()
    return (float(stats["robotX"]), float(stats["robotY"])) if stats.get("robotX") else None


def test_the_map_a_command_approved_stop_and_resume(console, browser):
    store, page = console["store"], browser
    page.open(console["url"])
    rooms, places, objects = count(store, "Room"), count(store, "MeshPlace"), count(store, "Object")
    page.until(lambda _: int(page.stats().get("objects", 0)) == objects, "the objects on the map")
    stats = page.stats()
    assert (int(stats["rooms"]), int(stats["places"]), int(stats["objects"])) == (rooms, places, objects)
    edges = store.query("MATCH (:MeshPlace)-[r:MESH_PLACE_CONNECTED]->(:MeshPlace) RETURN count(r) AS n")[0]["n"]
    assert int(stats["edges"]) * 2 == edges  # stored in both directions, drawn once
    # Fitted on load: the whole scene is drawn.
    assert (int(stats["drawnRooms"]), int(stats["drawnPlaces"]), int(stats["drawnObjects"])) == (rooms, places, objects)
    start = page.until(lambda _: robot_at(page), "the robot on the map")
    assert start == pytest.approx(RobotStateStore(store).position_of(START)[:2], abs=1e-3)  # sent to the mm
    assert page.find("#stop").is_displayed()
    page.shot("1-map")

    # Zoom in (the wheel, over the map's centre): what is off-screen is not drawn; a drag pans; Fit shows all.
    fitted = [float(v) for v in stats["view"].split(",")]
    for _ in range(3):
        page.driver.execute_script("const map = document.getElementById('map'), box = map.getBoundingClientRect();"
                                   "map.dispatchEvent(new WheelEvent('wheel', {deltaY: -300, cancelable: true,"
                                   " clientX: box.left + box.width / 2, clientY: box.top + box.height / 2}));")
    page.until(lambda _: float(page.stats()["view"].split(",")[2]) > 3 * fitted[2], "the zoom")
    page.until(lambda _: 0 < int(page.stats()["drawnPlaces"]) < places, "the places off-screen left out")
    zoomed = [float(v) for v in page.stats()["view"].split(",")]
    ActionChains(page.driver).drag_and_drop_by_offset(page.find("#map"), -200, 0).perform()
    page.until(lambda _: float(page.stats()["view"].split(",")[0]) == pytest.approx(zoomed[0] + 200 / zoomed[2]),
               "the pan to the right by 200 px")
    page.find("#fit").click()
    page.until(lambda _: int(page.stats()["drawnPlaces"]) == places, "the whole scene again")

    box = store.query(NEAREST_BOX)[0]["box"]
    page.type(NEAREST, "#send-command")
    first = page.command_entry(0)
    page.visible("#approve", "the plan's Approve button")
    stages = [li.get_attribute("data-stage") for li in first.find_elements(By.CSS_SELECTOR, ".stages > li")]
    assert {"grounding", "goal", "plan", "confirm"} <= set(stages), stages
    assert NEAREST_BOX in [code.text for code in first.find_elements(By.CSS_SELECTOR, "code.query")]
    assert f"(holding {box})" in [code.text for code in first.find_elements(By.CSS_SELECTOR, "code.goal")]
    assert first.find_element(By.CSS_SELECTOR, ".plan-summary").text.strip()
    stats = page.stats()
    assert int(stats["planSteps"]) >= 2 and int(stats["planPoints"]) >= 2, stats
    assert robot_at(page) == start  # nothing moves before the approval
    page.shot("2-plan-to-confirm")

    page.find("#approve").click()
    page.until(lambda _: (here := robot_at(page)) is not None and here != start, "the robot to move on the map")
    page.until(lambda _: int(page.stats()["currentStep"]) >= 0, "the current step on the map")
    page.shot("3-approved-moving")

    page.find("#stop").click()
    banner = page.visible("#stopped-banner", "the stopped banner")
    assert "stop" in banner.text.lower()
    assert page.find("body").get_attribute("data-stopped") == "true"
    page.until(lambda _: state_of(first) == "done", "the command to end after the stop")
    assert first.get_attribute("data-outcome") in ("stopped", "cancelled", "failed"), first.text
    stopped_at = robot_at(page)
    page.shot("4-stopped")

    page.type(NEAREST, "#send-command")
    refused = page.command_entry(1)
    page.until(lambda _: state_of(refused) == "done", "the command sent while stopped to be refused")
    # Refused at once, saying why: the language server's rejection (code "stopped").
    assert refused.get_attribute("data-outcome") == "stopped", refused.text
    reason = refused.find_element(By.CSS_SELECTOR, ".result")
    assert reason.is_displayed() and "the robot is stopped" in reason.text, reason.text
    assert not refused.find_elements(By.CSS_SELECTOR, '.stages > li[data-stage="plan"]')
    assert robot_at(page) == stopped_at
    page.shot("5-refused-while-stopped")

    page.find("#resume").click()  # no operator name yet: the page asks for it, nothing is sent
    assert "name" in page.find("#resume-hint").text
    assert page.find("#stopped-banner").is_displayed()
    page.find("#operator-name").send_keys("ana")
    page.find("#resume").click()
    page.until(lambda d: not d.find_element(By.ID, "stopped-banner").is_displayed(), "the banner to go")
    assert page.find("body").get_attribute("data-stopped") == "false"
    page.type(NEAREST, "#send-command")
    again = page.command_entry(2)
    page.until(lambda _: state_of(again) == "confirm", "the command after the resume to reach its confirmation")
    page.shot("6-resumed")
    page.find("#refuse").click()
    page.until(lambda _: again.get_attribute("data-outcome") == "refused", "the refusal's result")
    assert page.script_errors() == []


def test_a_clarification_offers_candidates_choosing_one_continues_cancel_ends_it_and_a_question_is_answered(
        console, browser):
    page, (first_box, second_box) = browser, console["two_boxes"]
    page.open(console["url"])
    page.until(lambda _: int(page.stats().get("objects", 0)) > 0, "the map")
    page.type(AMBIGUOUS, "#send-command")
    asked = page.command_entry(0)
    page.until(lambda _: asked.get_attribute("data-outcome") == "clarify", "the clarification")
    assert "Which box do you mean?" in asked.text
    buttons = asked.find_elements(By.CSS_SELECTOR, ".candidate")
    assert [b.get_attribute("data-symbol") for b in buttons] == [first_box, second_box]
    assert int(page.stats()["candidates"]) == 2  # highlighted on the map
    page.shot("1-candidates")

    page.find(f".candidate[data-symbol={second_box}]").click()
    follow = page.command_entry(1)
    page.until(lambda _: state_of(follow) == "confirm", "the chosen box's plan to reach its confirmation")
    assert f"(holding {second_box})" in [code.text for code in follow.find_elements(By.CSS_SELECTOR, "code.goal")]
    assert int(page.stats()["candidates"]) == 0 and int(page.stats()["planSteps"]) >= 2
    page.shot("2-chosen-planned")
    follow.find_element(By.CSS_SELECTOR, "button.cancel").click()
    page.until(lambda _: follow.get_attribute("data-outcome") == "cancelled", "the cancelled command's result")
    assert not follow.find_elements(By.CSS_SELECTOR, "#approve, button.cancel")

    page.type("How many boxes are there?", "#send-ask")
    answered = page.until(lambda d: (found := d.find_elements(By.CSS_SELECTOR, '#log li.ask[data-state="answered"]'))
                          and found[0], "the answer")
    boxes = len(console["store"].query(BOXES))
    assert answered.find_element(By.CSS_SELECTOR, ".answer-text").text == str(boxes)
    assert answered.find_element(By.CSS_SELECTOR, ".explanation").text == "I counted the rows."
    page.shot("3-answered")
    assert page.script_errors() == []


def test_a_hostile_class_name_is_shown_as_text(console, browser):
    page, store, symbol = browser, console["store"], console["hostile"]
    page.open(console["url"])
    page.until(lambda _: int(page.stats().get("objects", 0)) == count(store, "Object"), "the map")
    legend = page.until(lambda d: [li for li in d.find_elements(By.CSS_SELECTOR, "#legend-list li")
                                   if li.get_attribute("data-cls") == HOSTILE], "the hostile class in the legend")
    assert legend[0].text.startswith(HOSTILE)
    # Click the object on the map: its details show the class as the same literal text.
    x, y = (store.query(f"MATCH (o:Object {{nodeSymbol: '{symbol}'}}) RETURN o.x AS x, o.y AS y")[0][k]
            for k in ("x", "y"))
    page.click_at(x, y)
    page.until(lambda d: d.find_element(By.ID, "info-room").text not in ("", "…"), "the object's details")
    assert page.find("#info-symbol").text == symbol and page.find("#info-class").text == HOSTILE
    page.shot("1-hostile-as-text")

    # The operator's addition: drawn in its own style, never seen by the robot.
    assert int(page.stats()["operator"]) == 1
    page.click_at(*console["added_at"])
    page.until(lambda d: d.find_element(By.ID, "info-symbol").text == console["added"], "the addition's details")
    page.until(lambda d: d.find_element(By.ID, "info-seen").text == "never (added by an operator)",
               "when the addition was seen")
    assert page.find("#info-class").text == "fire extinguisher"

    # The corrections panel lists the correction as text, and its Revert goes through the language server.
    page.find("#panel-corrections > summary").click()
    correction = f"{symbol}.class"
    item = page.visible(f'#corrections-list li[data-correction-id="{correction}"]', "the correction in its panel")
    assert item.get_attribute("data-status") == "active" and json.dumps(HOSTILE) in item.text, item.text
    page.shot("2-hostile-correction")
    item.find_element(By.CSS_SELECTOR, "button.revert").click()
    page.until(lambda _: page.attribute(f'#corrections-list li[data-correction-id="{correction}"]', "data-status")
               == "reverted", "the correction to be reverted")
    assert store.query(f"MATCH (o:Object {{nodeSymbol: '{symbol}'}}) RETURN o.class AS c")[0]["c"] == "plant"

    assert page.driver.find_elements(By.TAG_NAME, "img") == []
    assert page.driver.execute_script("return window.__hostile") is None
    with pytest.raises(NoAlertPresentException):
        page.driver.switch_to.alert.text  # noqa: B018  (reading it is what raises)
    assert page.script_errors() == []


@contextmanager
def mirror_beside(console: dict[str, Any]) -> Iterator[Callable[[spark_dsg.DynamicSceneGraph, int], None]]:
    """A dsg_mirror node in the console's namespace, on a topic of its own, until the block ends: ``send(graph,
    sequence)`` publishes one snapshot (stamped 5 s after the one before, ending about now) and waits for its
    status, without error."""
    topic = f"{NS}/dsg_update"
    params = {**console["db"], "dsg_topic": topic, "status_period_s": 0.0}
    mirror = DsgMirrorNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    probe = rclpy.create_node("probe")
    publisher = probe.create_publisher(DsgUpdate, topic, qos(1))
    status: Collector[MirrorStatus] = Collector(probe, MirrorStatus, f"{NS}/mirror_status")

    def send(graph: spark_dsg.DynamicSceneGraph, sequence: int) -> None:
        message = DsgUpdate(layer_contents=graph.to_binary(include_mesh=False), full_update=True,
                            sequence_number=sequence)
        message.header.stamp.sec = int(time.time()) - 10 + 5 * sequence
        after = status.count
        publisher.publish(message)
        assert status.wait(lambda m: m.sequence == sequence, 30.0, after=after,
                           what=f"status {sequence}").last_error == ""

    with spinning(mirror, probe):
        wait_for_subscribers(publisher)
        wait_until(lambda: mirror.count_subscribers(f"{NS}/mirror_status") >= 2, 20.0, "the console and the probe")
        yield send


def test_a_move_reaches_the_map_the_history_panel_and_the_health_panel(console, browser, small_scene):
    """The mirror node mirrors the scene, then the scene with a bag moved 3 m: the page's map follows it (the
    bag is found where it went), the history panel lists the move and draws it, the health panel the mirror."""
    page, store = browser, console["store"]
    page.open(console["url"])
    page.until(lambda _: int(page.stats().get("objects", 0)) == count(store, "Object"), "the map")
    bag = store.query("MATCH (o:Object {class: 'bag'}) RETURN o.nodeSymbol AS s, o.x AS x, o.y AS y "
                      "ORDER BY s LIMIT 1")[0]
    with mirror_beside(console) as send:
        send(small_scene, 1)
        objects = small_scene.get_layer(spark_dsg.DsgLayers.OBJECTS).nodes
        attributes = next(n for n in objects if n.id.str() == bag["s"]).attributes
        attributes.position = attributes.position + np.array([3.0, 0.0, 0.0])
        send(small_scene, 2)
        page.until(lambda d: d.find_element(By.ID, "health-sequence").text == "2", "the mirror in the health panel")
        # The map follows: the bag answers a click where it went.
        page.until(lambda _: page.click_at(bag["x"] + 3.0, bag["y"]) or page.find("#info-symbol").text == bag["s"],
                   "the moved bag on the map", timeout_s=20.0)
        page.find("#panel-history > summary").click()
        page.find("#history-load").click()
        moved = page.visible(f'#history-list li[data-kind="moved"][data-symbol="{bag["s"]}"]', "the move")
        assert "3.0 m" in moved.text, moved.text
        assert int(page.stats()["moves"]) == 1
        page.shot("1-moved-in-history")
        # Every window the History panel offers is one the server answers: each lists the move, none an error.
        choices = page.driver.find_elements(By.CSS_SELECTOR, "#history-range option")
        assert [c.get_attribute("value") for c in choices] == ["300", "3600", "86400", "604800"]
        assert not [c.text for c in choices if not c.is_enabled()]
        for choice in choices:
            page.driver.execute_script("document.getElementById('history-list').replaceChildren()")
            choice.click()
            page.find("#history-load").click()
            page.visible(f'#history-list li[data-kind="moved"][data-symbol="{bag["s"]}"]', f"the move ({choice.text})")
            assert not page.driver.find_elements(By.CSS_SELECTOR, "#history-list li.error"), choice.text
    assert page.script_errors() == []


def test_objects_and_places_moved_added_and_removed_reach_an_open_page(console, browser, small_scene):
    """The mirror node mirrors the scene, then the scene with an object moved 2 m, one removed, one added, places
    moved 2 m, removed and added: the open page's map holds each where the database has it, the removed ones
    gone, and every edge of the places (read by change: the history's events since the console's last read)."""
    page, store = browser, console["store"]
    page.open(console["url"])
    page.until(lambda _: int(page.stats().get("objects", 0)) == count(store, "Object"), "the map")
    with mirror_beside(console) as send:
        send(small_scene, 1)
        changes = change_map(small_scene, place_share=0.1)
        send(small_scene, 2)
        edges = store.query("MATCH (:MeshPlace)-[r:MESH_PLACE_CONNECTED]->(:MeshPlace) RETURN count(r) AS n")[0]["n"]
        page.until(lambda _: (int(page.stats()["places"]), 2 * int(page.stats()["edges"])) == (
            count(store, "MeshPlace"), edges), "the places and their edges as the database has them")
        wanted = {**changes.moved_objects, **changes.added_objects, **changes.moved_places, **changes.added_places}
        held = page.until(lambda _: (found := page_holds(page, [*wanted, *changes.removed_objects,
                                                                *changes.removed_places]))
                          and all(found[s] is not None for s in wanted) and found, "the changes on the page")
        for symbol, (x, y) in wanted.items():
            assert held[symbol] == pytest.approx([x, y], abs=1e-3), symbol
        assert all(held[s] is None for s in [*changes.removed_objects, *changes.removed_places]), held
        assert int(page.stats()["objects"]) == count(store, "Object")
        page.shot("1-changed")
    assert page.script_errors() == []


def page_holds(page: Page, symbols: list[str]) -> dict[str, list[float] | None]:
    """Where the page's own map (map.js's ``scene``, the module the page runs) has each symbol (None: not there)."""
    return page.driver.execute_async_script(
        "const [symbols, done] = arguments;"
        "import('/static/map.js').then(({ scene }) => done(Object.fromEntries(symbols.map((s) => {"
        "  const item = scene.items.get(s), place = scene.places.get(s);"
        "  return [s, item ? [item.x, item.y] : place ? [place[0], place[1]] : null]; }))));", symbols)


def test_text_the_server_cannot_take_is_refused_and_the_page_stays_connected(console, browser):
    """A lone surrogate (pasted from a broken clipboard, say) in a command: the page sends it escaped, the server
    refuses it naming why, and the page's socket keeps working both ways."""
    page = browser
    page.open(console["url"])
    page.until(lambda _: int(page.stats().get("objects", 0)) > 0, "the map")
    page.driver.execute_script("document.getElementById('instruction').value = 'bring the \\ud800 box';"
                               "document.getElementById('send-command').click();")
    refused = page.command_entry(0)
    page.until(lambda _: refused.get_attribute("data-outcome") == "rejected", "the command's refusal")
    reason = refused.find_element(By.CSS_SELECTOR, ".result").text  # the entry's own text holds the surrogate
    assert "command: text holds '\\ud800' at character 10" in reason, reason
    assert page.find("body").get_attribute("data-state") == "ready" and page.find("#connection").text == "connected"
    page.shot("1-refused-text")
    page.type("How many boxes are there?", "#send-ask")
    page.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#log li.ask[data-state="answered"]'), "the answer after it")
    assert page.script_errors() == []


def test_a_secured_console_opens_from_its_address_then_by_its_cookie_and_never_without(
        ros_domain_id, falkordb_uri, graph_name, small_store, browser):
    page, secret = browser, "s3cret/+&="
    with console_server(f"{NS}_secured", falkordb_uri, graph_name, secret=secret) as served:
        page.open(served.config.url)  # what the console prints: ?token=<secret>
        assert page.find("body").get_attribute("data-secured") == "true"
        assert "token" not in page.driver.current_url  # taken out of the address bar
        page.until(lambda _: int(page.stats().get("objects", 0)) == count(small_store, "Object"), "the map")
        page.open(served.base + "/")  # the cookie opens the page and its socket
        page.until(lambda _: int(page.stats().get("objects", 0)) == count(small_store, "Object"), "the map again")
        page.driver.delete_all_cookies()
        page.driver.get(served.base + "/")
        assert "401: this console needs its secret" in page.find("body").text
        assert page.driver.find_elements(By.ID, "map") == []


def test_a_reloaded_page_takes_its_session_back(console, browser):
    """A reload (or a dropped connection) within client_lost_s: the page asks for its session again and gets it,
    so the commands it started run on (test/console/test_bridge.py follows such a command to its end)."""
    page = browser
    page.open(console["url"])
    session = page.find("body").get_attribute("data-session")
    assert session
    page.driver.refresh()
    page.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-session"), "the hello after reload")
    assert page.find("body").get_attribute("data-session") == session
    assert page.script_errors() == []


def test_the_map_as_of_a_past_time_and_the_missed_snapshot_in_the_health_panel(
        ros_domain_id, falkordb_uri, graph_name, store, browser):
    """The mirror node gets the tiny scene unnumbered (the health panel says gaps cannot be detected, no alarm),
    then numbered 1, then the changed scene numbered 3 (O0 moved 3 m, O1 nudged 0.1 m, O3 gone, O5 new): the panel
    says 2 never arrived. The As-of slider at 5 minutes ago draws the objects of the first snapshot, O0 where it
    was and marked, O5 hidden, O3 marked gone; a class of markup stays text; Now returns to the live map; a time
    before the history is said in words and the map stays live."""
    page, ns, now = browser, f"{NS}_asof", time.time()
    topic = f"{ns}/dsg_update"
    with ros_session(ros_domain_id):
        params = {"db_uri": falkordb_uri, "graph_name": graph_name, "dsg_topic": topic, "status_period_s": 0.0,
                  "instance_check_s": 0.0}
        mirror = DsgMirrorNode(namespace=ns, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        probe = rclpy.create_node("probe")
        publisher = probe.create_publisher(DsgUpdate, topic, qos(1))
        status: Collector[MirrorStatus] = Collector(probe, MirrorStatus, f"{ns}/mirror_status")
        with spinning(mirror, probe), console_server(ns, falkordb_uri, graph_name) as served:
            wait_for_subscribers(publisher)
            wait_until(lambda: mirror.count_subscribers(f"{ns}/mirror_status") >= 2, 20.0, "the console and the probe")

            def send(graph: spark_dsg.DynamicSceneGraph, sequence: int, ago_s: float) -> None:
                message = DsgUpdate(layer_contents=graph.to_binary(include_mesh=False), full_update=True,
                                    sequence_number=sequence)
                message.header.stamp.sec = int(now - ago_s)
                after = status.count
                publisher.publish(message)
                done = status.wait(lambda m: m.sequence == sequence, 30.0, after=after, what=f"status {sequence}")
                assert done.last_error == ""

            send(tiny_scene(), 0, 900)
            page.open(served.base + "/")
            page.until(lambda _: int(page.stats().get("objects", 0)) == 5, "the map")
            gaps = page.until(lambda d: (e := d.find_element(By.ID, "health-gaps")).text != "–" and e, "the gap line")
            assert gaps.text == "gaps cannot be detected (the sender's sequence numbers are 0)"
            assert "bad" not in (gaps.get_attribute("class") or "")
            send(tiny_scene(), 1, 600)
            send(changed_scene(), 3, 200)
            Corrections(store).apply([("O2", "class", HOSTILE)], author="mallory")
            page.until(lambda d: d.find_element(By.ID, "health-gaps").text.startswith("1 missed, 0 late; last: "
                                                                                       "snapshot 2 never arrived"),
                       "the missed snapshot in the health panel")
            assert "bad" in page.find("#health-gaps").get_attribute("class")
            page.until(lambda _: page.attribute("#legend-list li:first-child", "data-cls") is not None, "the legend")
            page.find("#panel-as-of > summary").click()
            page.shot("1-live-with-gap")

            def slide(ago_s: int) -> None:
                page.driver.execute_script("const s = document.getElementById('as-of-ago'); s.value = arguments[0];"
                                           "s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change'));",
                                           str(-ago_s))

            slide(300)
            page.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-as-of") == "shown", "as of")
            stats = page.until(lambda _: (found := page.stats())["asOf"] and found, "the map as of then drawn")
            assert (int(stats["objects"]), int(stats["asOfMoved"]), int(stats["asOfGone"]),
                    int(stats["asOfHidden"])) == (5, 1, 1, 1), stats
            assert page.find("#as-of-banner").is_displayed() and stats["asOf"] in page.find("#as-of-banner").text
            marks = {li.get_attribute("data-symbol"): li.get_attribute("data-mark")
                     for li in page.driver.find_elements(By.CSS_SELECTOR, "#as-of-list li")}
            assert marks == {"O0": "moved", "O3": "gone", "O5": "hidden"}
            assert "1 moved since" in page.find("#as-of-summary").text
            legend = [li for li in page.driver.find_elements(By.CSS_SELECTOR, "#legend-list li")
                      if li.get_attribute("data-cls") == HOSTILE]
            assert legend and legend[0].text.startswith(HOSTILE)
            page.click_at(*MOVED_FROM[:2])  # O0 answers a click where it was then
            page.until(lambda d: d.find_element(By.ID, "info-symbol").text == "O0", "O0 where it was")
            page.shot("2-as-of-five-minutes-ago")

            page.find("#as-of-now").click()
            page.until(lambda _: page.stats()["asOf"] == "", "the live map again")
            assert not page.find("#as-of-banner").is_displayed()
            assert (int(page.stats()["objects"]), int(page.stats()["asOfHidden"])) == (5, 0)
            page.find("#object-info-close").click()
            page.click_at(*MOVED_TO[:2])  # O0 where it is now
            page.until(lambda d: d.find_element(By.ID, "info-symbol").text == "O0", "O0 where it is")

            page.driver.execute_script("const span = document.getElementById('as-of-span'); span.value = '604800';"
                                       "span.dispatchEvent(new Event('change'));")
            slide(3 * 86400)
            page.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-as-of") == "error", "refused")
            summary = page.find("#as-of-summary")
            assert "is before the history began: it answers from" in summary.text, summary.text
            assert "error" in summary.get_attribute("class") and page.stats()["asOf"] == ""
            page.shot("3-before-the-history")
    assert page.driver.find_elements(By.TAG_NAME, "img") == []
    assert page.driver.execute_script("return window.__hostile") is None
    assert page.script_errors() == []
