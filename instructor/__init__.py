"""The instructor's tools, kept out of the students' package; a project carries them as one
file, instructor.pyz (tools/one_file.py builds it), run in the project folder:

    python instructor.pyz stick make E:\\     a workshop stick: every wheel, MNIST, install.py
    python instructor.pyz room reports        a room's verify_install --json reports, summarised

docs/workshop.md says when to use each. They read the project's settings from its data file
(``project``) and print strangers' text with the project's doctor (``doctor``, doctor.pyz);
nothing of the students' package imports them.
"""
