"""The instructor's tools, kept out of the students' package: run them in the project folder.

    python -m instructor.stick make E:\\     a workshop stick: every wheel, MNIST, install.py
    python -m instructor.room reports        a room's verify_install --json reports, summarised

docs/workshop.md says when to use each. They use the doctor (``gpu_doctor``) for the project's
settings and safe printing; nothing of the students' package imports them.
"""
