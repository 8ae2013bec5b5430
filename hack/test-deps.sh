#!/usr/bin/env bash
# Installs what the tests need besides Go: git (with git-http-backend) and the
# OpenSSH server the SSH tests start on 127.0.0.1. Uses apt-get when run as root.
set -euo pipefail

missing=()
command -v git >/dev/null 2>&1 && [[ -x "$(git --exec-path)/git-http-backend" ]] || missing+=(git)
[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: please install ${missing[*]} (the tests run a real git server and sshd)" >&2
  exit 1
fi
echo "test-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
