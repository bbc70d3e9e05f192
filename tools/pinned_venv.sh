# A venv that holds exactly the pins of one requirements file: installed with
# --no-deps, stamped with the pins' hash, and made anew when the pins change
# (or an install was interrupted), so a missing pin fails on this machine as
# it would on a fresh one. Sourced by tools/setup_executorch.sh and
# tools/setup_llama_cpp.sh, which define say() first:
#
#   if pinned_venv_ready VENV REQUIREMENTS; then say "...already installed"; exit 0; fi
#   pinned_venv_install VENV REQUIREMENTS "what the install takes"
#   ...check that what the venv is for imports...
#   pinned_venv_stamp VENV REQUIREMENTS
#
#   PARE_HOST_PYTHON   the interpreter to make the venv with (default python3)

# The pins alone, so editing a comment does not make the venv anew.
pinned_venv_pins() {
  grep -vE '^[[:space:]]*(#|$)' "$1" | sha256sum | cut -d' ' -f1
}

pinned_venv_ready() {
  [[ -x "$1/bin/python3" && "$(cat "$1/.pare-requirements.sha256" 2>/dev/null)" == "$(pinned_venv_pins "$2")" ]]
}

pinned_venv_install() {
  local venv="$1" requirements="$2" python="${PARE_HOST_PYTHON:-python3}"
  if [[ -e "$venv" ]]; then
    say "$venv: $requirements changed (or an install was interrupted): making the venv anew"
    rm -rf "$venv"
  fi
  say "$venv: creating it with $("$python" --version)"
  "$python" -m venv "$venv"
  say "$venv: installing $requirements with --no-deps ($3)"
  "$venv/bin/python3" -m pip install -q --disable-pip-version-check --no-deps -r "$requirements"
}

pinned_venv_stamp() {
  pinned_venv_pins "$2" >"$1/.pare-requirements.sha256"
}
