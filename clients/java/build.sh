#!/usr/bin/env bash
# The Java client's one build entry: compile for Java 8, package the jar, then run every test
# (bytecode check, key vectors, JSON, retries, live approve/reject) against a real
# `signoff serve --demo` started here on a free loopback port and stopped at the end.
#
#   clients/java/build.sh            # from anywhere; needs javac/jar (JDK 9+) and the project's .venv
#   SIGNOFF=/path/to/signoff clients/java/build.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$here/build"
signoff="${SIGNOFF:-$root/.venv/bin/signoff}"
python="$(dirname "$signoff")/python"
[ -x "$python" ] || python="python3"
javac_flags=(--release 8 -encoding UTF-8 -Xlint:all -Werror)

rm -rf "$build"
mkdir -p "$build/classes" "$build/test-classes"
find "$here/src/main/java" -name '*.java' | sort > "$build/main-sources.txt"
find "$here/src/test/java" -name '*.java' | sort > "$build/test-sources.txt"
javac "${javac_flags[@]}" -d "$build/classes" @"$build/main-sources.txt"
jar --create --file "$build/signoff-client.jar" -C "$build/classes" .
javac "${javac_flags[@]}" -cp "$build/signoff-client.jar" -d "$build/test-classes" \
    @"$build/test-sources.txt"
echo "built $build/signoff-client.jar ($(find "$build/classes" -name '*.class' | wc -l) classes, --release 8)"

work="$(mktemp -d)"
server=""
stop() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap stop EXIT
port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$signoff" serve --demo --db "$work/demo.db" --port "$port" --reconcile-interval 0 \
    > "$work/server.log" 2>&1 &
server=$!
url="http://127.0.0.1:$port"
if ! "$python" - "$url" <<'EOF'
import sys, time, urllib.request
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(sys.argv[1] + "/healthz", timeout=1).read()
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
EOF
then
    echo "signoff serve did not answer on $url:" >&2; cat "$work/server.log" >&2; exit 1
fi

token() { "$signoff" dev-token --demo --client jdk8-crm "$@"; }
status=0
java -cp "$build/signoff-client.jar:$build/test-classes" \
    -Dsignoff.url="$url" \
    -Dsignoff.jar="$build/signoff-client.jar" \
    -Dsignoff.vectors="$here/src/test/resources/confirmation-key-vectors.json" \
    -Dsignoff.token.alice="$(token --sub alice --tenant acme --role refund_approver)" \
    -Dsignoff.token.bob="$(token --sub bob --tenant acme --role refund_approver)" \
    -Dsignoff.token.globex="$(token --sub carol --tenant globex --role refund_approver)" \
    -Dsignoff.token.agent="$(token --sub u_42 --tenant acme --act agent:support-bot)" \
    -Dsignoff.token.alice_other_app="$("$signoff" dev-token --demo --client other-app \
        --sub alice --tenant acme --role refund_approver)" \
    com.signoff.client.TestRunner \
    com.signoff.client.BytecodeTest \
    com.signoff.client.KeyDerivationTest \
    com.signoff.client.JsonTest \
    com.signoff.client.ProblemMappingTest \
    com.signoff.client.RetryPolicyTest \
    com.signoff.client.LiveServerTest || status=$?
if [ "$status" -ne 0 ]; then
    echo "--- signoff serve log ---" >&2; tail -n 50 "$work/server.log" >&2
fi
exit "$status"
