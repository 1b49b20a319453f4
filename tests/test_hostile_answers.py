"""Answers with quotes, markup, backslashes, non-ASCII text or code are data, never code.

Every generated XML, TOML, YAML and JSON file still parses, and the values read back equal
what was typed (surrounding spaces trimmed).
"""

from __future__ import annotations

import email
import email.utils
import subprocess
import sys

import pytest
from conftest import TEMPLATE_DIR

HOSTILE_NAMES = {
    "double quote": 'The "Best" Digits',
    "single quote": "Jane's digits",
    "ampersand and markup": "Digits & <Friends> </configuration>",
    "backslash": "C:\\Users\\digits\\",
    "chinese": "手写数字识别",
    "accented": "Reconnaissance de chiffres écrits à la main",
    "spaces around": "   Spacey digits   ",
    "emoji outside the BMP": "Digits \U0001f600 on \U0001d521\U0001d526\U0001d524\U0001d531",
    "everything at once": 'Zo\u00eb\'s "Q" \\ & <b> \U0001f680 \u624b\u5199 \u00a0end',
}
# The build backend's first step of `pip install .`: the project's metadata from pyproject.toml.
PREPARE_METADATA = (
    "import sys; from setuptools import build_meta; "
    "print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))"
)
INJECTION = "x'''); import pathlib; pathlib.Path('INJECTED').write_text('pwned'); ('"


def structured_files(baked):
    """Configuration files."""
    return sorted(
        f for f in baked.files() if f.endswith((".xml", ".toml", ".yml", ".yaml", ".json"))
    )


@pytest.mark.parametrize("name", HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
def test_hostile_project_name_round_trips_through_every_config_file(bake, name):
    baked = bake(
        project_name=name,
        description=name,
        author_name=name.replace(",", ""),
        ide="both",
        project_slug="hostile-digits",
    )
    assert baked.ok, baked.output

    for relative in structured_files(baked):
        parse = {".xml": baked.xml, ".toml": baked.toml, ".json": baked.json}.get(
            "." + relative.rsplit(".", 1)[-1], baked.yaml
        )
        parse(relative)  # raises if the file no longer parses

    expected = name.strip()
    project = baked.toml("pyproject.toml")["project"]
    assert project["description"] == expected
    assert project["authors"][0]["name"] == expected
    settings = baked.json("environments/project.json")
    assert settings["project_name"] == expected
    own_copy = baked.json(f"src/{baked.package}/machinery/this_project.json")  # the package's
    assert own_copy["project_name"] == expected
    assert baked.json(".cookiecutter.json")["cookiecutter"]["project_name"] == name
    for markdown in ("README.md", "README.zh-CN.md"):
        assert f"# {expected}\n" in baked.read(markdown)
        assert f"\n{expected}\n" in baked.read(markdown)  # the description
    assert expected in baked.read("LICENSE")


@pytest.mark.parametrize("name", HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
def test_hostile_answers_give_package_metadata_that_installs(bake, name, tmp_path):
    """What `pip install .` asks setuptools first: the metadata, read back as typed."""
    baked = bake(description=name, author_name=name, project_slug="hostile-digits")
    assert baked.ok, baked.output

    result = subprocess.run(
        [sys.executable, "-c", PREPARE_METADATA, str(tmp_path)],
        cwd=baked.path,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    info = tmp_path / result.stdout.strip().splitlines()[-1]
    metadata = email.message_from_string((info / "METADATA").read_text("utf-8"))
    scripts = (info / "entry_points.txt").read_text("utf-8")

    assert metadata["Summary"] == name.strip()
    author, address = email.utils.parseaddr(metadata["Author-email"])
    assert (author, address) == (name.strip(), "you@example.com")
    assert "hostile-digits-train = hostile_digits.train:main" in scripts


def test_chinese_name_gives_a_usable_slug_and_package(bake):
    baked = bake(project_name="手写数字识别")

    assert baked.ok, baked.output
    assert baked.path.name == "shou-xie-shu-zi-shi-bie"
    assert baked.package == "shou_xie_shu_zi_shi_bie"
    assert (baked.path / "src" / "shou_xie_shu_zi_shi_bie" / "__init__.py").is_file()


@pytest.mark.parametrize("question", ["project_name", "description", "author_name", "author_email"])
def test_injection_payload_in_an_answer_is_never_executed(bake, question, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    payload = INJECTION.replace(",", "") if question == "author_name" else INJECTION
    answers = {question: payload, "project_slug": "injection-test"}
    if question == "author_email":
        answers[question] = "a@b.c" + payload

    baked = bake(**answers)

    assert not list(tmp_path.rglob("INJECTED"))
    if baked.ok:
        assert not list(baked.path.rglob("INJECTED"))


def test_a_jinja_expression_in_an_answer_is_rendered_by_cookiecutter_as_the_readme_warns(bake):
    """What the template README warns about, kept true: cookiecutter renders answers before
    any hook, so an expression typed as an answer is evaluated on the baking machine."""
    baked = bake(description="Six times seven is {{ 6 * 7 }}.")

    assert baked.ok, baked.output
    assert "Six times seven is 42." in baked.read("README.md")
    readme = (TEMPLATE_DIR / "README.md").read_text(encoding="utf-8")
    assert "Never\nbake with answers from someone you do not trust" in readme
