"""Lessons: a lesson folder in (prose, starter, solution, checkpoints); runs and verdicts out.

lesson    read and validate a lesson, run learner code, check it against a checkpoint
"""
