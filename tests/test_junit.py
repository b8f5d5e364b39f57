"""`check FILES --junit report.xml`: JUnit XML that CI systems display, checked against the rules of the Apache
Ant JUnit schema (the strictest of the JUnit formats CI tools read): its required elements, attributes, their
types and their order."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

from conftest import attn_drill_script

REPO = Path(__file__).parent.parent
SDPA = REPO / "reference" / "sdpa.py"


def valid_ant_junit(root: ET.Element) -> None:
    """The schema's rules: testsuites holds testsuite elements only (no attributes of its own); a testsuite has
    name, package, id, timestamp (no zone), hostname, tests, failures, errors, time, and holds properties, its
    test cases, system-out and system-err, in that order; a testcase has name, classname and time and at most one
    of skipped, error, failure; error and failure carry a type."""
    assert root.tag == "testsuites" and not root.attrib
    for suite in root:
        assert suite.tag == "testsuite"
        for name in ("name", "package", "hostname"):
            assert suite.get(name), name
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp"))
        for name in ("id", "tests", "failures", "errors"):
            int(suite.get(name))
        float(suite.get("time"))
        tags = [child.tag for child in suite]
        assert tags[0] == "properties" and tags[-2:] == ["system-out", "system-err"], tags
        assert set(tags[1:-2]) <= {"testcase"}, tags
        for case in suite.iter("testcase"):
            assert case.get("name") and case.get("classname")
            float(case.get("time"))
            assert len(case) <= 1 and all(c.tag in ("skipped", "error", "failure") for c in case)
            assert all(c.get("type") for c in case if c.tag != "skipped")


def test_a_right_and_a_wrong_file_give_two_cases_and_one_failure_naming_the_slug(isolated):
    (isolated / "right.py").write_text(SDPA.read_text())
    (isolated / "wrong.py").write_text(SDPA.read_text().replace(" / math.sqrt(d)", ""))
    r = subprocess.run([attn_drill_script(), "check", "right.py", "wrong.py", "-e", "sdpa", "--junit", "r.xml",
                        "--no-record", "--seed", "4"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    root = ET.parse(isolated / "r.xml").getroot()
    valid_ant_junit(root)
    (suite,) = root
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    right, wrong = suite.iter("testcase")
    assert right.get("name").endswith("right.py") and len(right) == 0
    (failure,) = wrong
    assert failure.tag == "failure" and failure.get("type") == "missing-scale"
    assert failure.get("message").startswith("missing-scale: ") and "FAILED  sdpa" in failure.text


def test_a_file_that_cannot_be_checked_is_an_error_and_a_bad_path_is_a_usage_error(isolated):
    (isolated / "right.py").write_text(SDPA.read_text())
    r = subprocess.run([attn_drill_script(), "check", "right.py", "gone.py", "-e", "sdpa", "--junit", "r.xml",
                        "--no-record"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    root = ET.parse(isolated / "r.xml").getroot()
    valid_ant_junit(root)
    assert root[0].get("errors") == "1" and root[0].find("testcase/error").get("type") == "not-checked"
    bad = subprocess.run([attn_drill_script(), "check", "right.py", "-e", "sdpa", "--junit", "no/such/r.xml"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "its folder does not exist" in bad.stderr and len(bad.stderr.splitlines()) == 1
