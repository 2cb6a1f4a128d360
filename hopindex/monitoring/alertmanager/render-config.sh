#!/bin/sh
# Writes an Alertmanager config from a template, replacing ${ALERTMANAGER_WEBHOOK_URL}
# with that environment variable (Alertmanager reads none itself).
#   ALERTMANAGER_WEBHOOK_URL=https://... sh render-config.sh alertmanager.yml.tmpl OUT
# POSIX sh and awk only: it runs in the busybox-based Alertmanager image.
set -eu

if [ "$#" -ne 2 ]; then
    echo "usage: render-config.sh TEMPLATE OUTPUT" >&2
    exit 2
fi
template=$1
output=$2
url=${ALERTMANAGER_WEBHOOK_URL:-}

fail() {
    echo "ALERTMANAGER_WEBHOOK_URL: $1" >&2
    exit 1
}
[ -n "$url" ] || fail "not set: the URL Alertmanager POSTs alerts to (http:// or https://)"
case $url in
    http://?*|https://?*) ;;
    *) fail "must start with http:// or https://" ;;
esac
# It goes inside a double-quoted YAML string, on one line.
tab=$(printf '\t')
newline='
'
case $url in
    *[\"\\\ ]*|*"$tab"*|*"$newline"*)
        fail "must be one line without quotes, backslashes, spaces or tabs" ;;
esac
[ -r "$template" ] || { echo "render-config.sh: cannot read $template" >&2; exit 1; }

# The URL may carry a token: readable by this user only.
umask 077
# index/substr, not gsub: gsub would read a URL's & as the matched text.
awk -v token='${ALERTMANAGER_WEBHOOK_URL}' '
{
    line = $0
    out = ""
    while ((at = index(line, token)) > 0) {
        out = out substr(line, 1, at - 1) ENVIRON["ALERTMANAGER_WEBHOOK_URL"]
        line = substr(line, at + length(token))
    }
    print out line
}' "$template" > "$output.tmp" || { rm -f "$output.tmp"; exit 1; }
mv "$output.tmp" "$output"
