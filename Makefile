# The two commands the README opens with. Both run setup first (idempotent).
.PHONY: setup demo test

setup:
	bash tools/setup.sh

demo: setup
	.venv/bin/python tools/main_job.py

test: setup
	bash tools/run_tests.sh
