"""docs/deploy.md's ACL file ("ACL users"), read out of the document, for
the tests that run each Redis user with exactly its ACL (tests/test_acl.py,
tests/e2e/topologies/test_acl.py)."""

from __future__ import annotations

import re

from tests.e2e.server import ROOT

DEPLOY_DOC = ROOT / "docs" / "deploy.md"
ACL_FILE = "# /etc/redis/users.acl"
# The tests' own passwords, in place of the document's placeholders.
ACL_PASSWORDS = {
    "echomq-worker": "w0rker-pw",
    "echomq-dashboard": "d4sh-pw",
    "echomq-viewer": "v1ew-pw",
}


def documented_acl() -> dict[str, str]:
    """The users of the ACL file in docs/deploy.md: name -> its rules, the
    password placeholder replaced by the test's."""
    text = DEPLOY_DOC.read_text()
    start = text.index(f"```\n{ACL_FILE}\n")
    block = text[start + 4 : text.index("```", start + 4)]
    users = {}
    for line in block.splitlines():
        if line.startswith("user "):
            _, name, rules = line.split(" ", 2)
            users[name] = re.sub(r">\S+", f">{ACL_PASSWORDS[name]}", rules)
    assert set(users) == set(ACL_PASSWORDS), users
    return users


def acl_rules(rules: str) -> list[str]:
    """ACL SETUSER's arguments: each rule, a selector ``(...)`` as one."""
    return re.findall(r"\([^)]*\)|\S+", rules)
