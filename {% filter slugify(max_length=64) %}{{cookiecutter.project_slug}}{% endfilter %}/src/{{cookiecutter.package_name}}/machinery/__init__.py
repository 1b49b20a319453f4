"""The machinery behind the training example: devices, optimizers, checkpoints and exact
resume, Ctrl+C and the NaN guard, progress and metrics, plots, the command line.

The learner's files (``model.py``, ``data.py``, ``train.py``) call into these modules; nothing
here needs reading to understand how the model learns. Nothing here imports the doctor
(``doctor.pyz``): the package has its own safe printing (``terminal_text``), command line
(``cli``, ``command_entry``) and copy of the answers it was generated with (``this_project``).
"""
