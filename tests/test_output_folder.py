"""Whatever is typed as the folder name, nothing outside a new project folder is touched.

cookiecutter creates the project folder before the pre-generation hook runs, and deletes it
when the hook refuses the answers. The template's folder is named
`{% filter slugify(max_length=64) %}{{cookiecutter.project_slug}}{% endfilter %}`, so the folder
it creates is always one new child of the output folder (or the output folder itself when
the name has no letters at all, which cookiecutter then refuses because it exists): `..`,
separators and drive letters cannot appear in it, and its length stays below the limits of
every file system. The hook then refuses the answer with its own sentence.
"""

from __future__ import annotations

import sys

import pytest
from conftest import TEMPLATE_DIR
from test_questions import cookiecutter_cli


def sibling_project(folder):
    """An existing project next to the new one, which must survive any answer."""
    keep = folder / "my-first-project" / "train.py"
    keep.parent.mkdir(parents=True)
    keep.write_text("print('my work')\n")
    return keep


@pytest.mark.parametrize("slug", ["new/..", "new/../..", "a/../../b", "new\\.."])
def test_a_slug_that_climbs_out_deletes_nothing(tmp_path, slug):
    out = tmp_path / "projects"
    out.mkdir()
    keep = sibling_project(out)
    outside = sibling_project(tmp_path)

    result = cookiecutter_cli("--no-input", str(TEMPLATE_DIR), "-o", str(out),
                              f"project_slug={slug}", home=tmp_path)  # fmt: skip

    assert result.returncode != 0
    assert keep.read_text() == "print('my work')\n"
    assert outside.read_text() == "print('my work')\n"
    assert f"The folder name (project_slug) {slug!r} is not usable" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "lenet-template-answers.json",
        keep.parent.name,
    ]


def test_dot_dot_with_a_fresh_output_folder_deletes_nothing(tmp_path):
    parent = tmp_path / "work"
    parent.mkdir()
    keep = sibling_project(parent)

    result = cookiecutter_cli("--no-input", str(TEMPLATE_DIR), "-o", str(parent / "fresh"),
                              "project_slug=..", home=tmp_path)  # fmt: skip

    assert result.returncode != 0
    assert keep.read_text() == "print('my work')\n"
    assert "The folder name (project_slug) '..' is not usable" in result.stderr
    assert sorted(p.name for p in parent.iterdir()) == [keep.parent.name]


def test_dot_dot_into_an_existing_output_folder_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "projects"
    out.mkdir()
    keep = sibling_project(out)

    result = cookiecutter_cli("--no-input", str(TEMPLATE_DIR), "-o", str(out),
                              "project_slug=..", home=tmp_path)  # fmt: skip

    assert result.returncode != 0
    assert keep.read_text() == "print('my work')\n"
    assert "already exists" in result.stdout + result.stderr  # cookiecutter's own refusal
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX absolute path")
def test_an_absolute_path_creates_nothing_outside_the_output_folder(tmp_path):
    out = tmp_path / "projects"
    out.mkdir()
    target = tmp_path / "elsewhere"

    result = cookiecutter_cli("--no-input", str(TEMPLATE_DIR), "-o", str(out),
                              f"project_slug={target}", home=tmp_path)  # fmt: skip

    assert result.returncode != 0
    assert not target.exists()
    assert "The folder name (project_slug)" in result.stderr


def test_a_300_character_slug_is_refused_with_a_sentence_not_an_os_error(tmp_path):
    out = tmp_path / "projects"

    result = cookiecutter_cli("--no-input", str(TEMPLATE_DIR), "-o", str(out),
                              "project_slug=" + "d" * 300, home=tmp_path)  # fmt: skip

    assert result.returncode != 0
    assert "File name too long" not in result.stdout + result.stderr
    assert "The folder name (project_slug) is 300 characters long" in result.stderr
    assert not [p for p in out.iterdir() if p.is_dir()]


def test_a_300_character_project_name_gives_a_short_slug_at_a_word_boundary(bake):
    words = "Handwritten digit recognition with LeNet on a DirectML laptop " * 5
    baked = bake(project_name=words.strip())

    assert baked.ok, baked.output
    assert baked.path.name == "handwritten-digit-recognition-with-lenet"
    assert baked.package == "handwritten_digit_recognition_with_lenet"


def test_a_valid_slug_is_the_folder_name_exactly(bake):
    baked = bake(project_slug="3d-digits-2", package_name="digits3d")

    assert baked.ok, baked.output
    assert baked.path.name == "3d-digits-2"


def test_a_rebake_with_f_keeps_the_users_own_files_that_the_new_answers_leave_out(tmp_path):
    """cookiecutter -f overwrites the template's files; the pruning must not delete the user's."""
    out = tmp_path / "projects"
    first = cookiecutter_cli("--no-input", str(TEMPLATE_DIR), "-o", str(out), home=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    project = out / "lenet-mnist"
    mine = {  # made by the user: a workflow of their own, and files this bake's answers prune
        ".github/workflows/release.yml": "name: release\n",
        ".vscode/settings.json": '{"editor.fontSize": 15}\n',
        "requirements.txt": "my-own-package==1.0\n",
    }
    for relative, text in mine.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text, encoding="utf-8")

    again = cookiecutter_cli("--no-input", "-f", str(TEMPLATE_DIR), "-o", str(out),
                             "github_actions=false", home=tmp_path)  # fmt: skip

    assert again.returncode == 0, again.stderr[-3000:]
    for relative, text in mine.items():
        assert (project / relative).read_text(encoding="utf-8") == text, relative
    assert (project / ".github/workflows/tests.yml").is_file()  # there before this bake
    assert not (project / ".vscode/launch.json").exists()  # written by this bake, pruned
    assert not (project / ".lenet-template-kept").exists()
    assert (project / "environment.yml").is_file()


def test_the_readme_says_what_a_rebake_with_f_replaces_and_keeps():
    readme = " ".join((TEMPLATE_DIR / "README.md").read_text(encoding="utf-8").split())
    paragraph = readme.split("(`cookiecutter -f`)**", 1)[1].split(" ## ", 1)[0]

    assert "replacing your edits" in paragraph and "keeps the files" in paragraph
    for path in (".github/", ".run/", ".vscode/", "LICENSE", "environment.yml", "requirements.txt"):
        assert f"`{path}`" in paragraph
