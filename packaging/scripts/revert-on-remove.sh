# Removing the package (not upgrading it) undoes what `hosttune tune apply` changed: build.py puts this function in
# place of the @REVERT_ON_REMOVE@ line of the deb's prerm and the rpm's %preun, which call it only on removal
# (prerm `remove`, %preun with $1 = 0), after stopping the units and while the program is still installed.
# The record of what to restore, /var/lib/hosttune/tune-state.json, is deleted by a revert that succeeded; when the
# revert fails it stays (the deb's postrm purge keeps it too), and the removal goes on: the host keeps hosttune's
# changes until `hosttune tune revert` runs from a reinstalled package. Every line is said, prefixed `hosttune:`.
hosttune_revert_on_remove() {
	state=/var/lib/hosttune/tune-state.json
	if [ ! -e "$state" ] && [ ! -L "$state" ]; then
		return 0  # `tune apply` never ran, or `tune revert` already did
	fi
	echo "hosttune: removing the package: reverting what \`hosttune tune apply\` changed (recorded in $state)"
	# The package's program and places (those the units use), whatever the caller's environment says; no byte code
	# left behind (prerm/%preun remove the package's __pycache__ after this).
	if out=$(env -u HOSTTUNE_STATE_DIR -u HOSTTUNE_ETC_DIR -u HOSTTUNE_RUNTIME_DIR -u HOSTTUNE_LOG_DIR \
		PYTHONDONTWRITEBYTECODE=1 PATH=/usr/sbin:/usr/bin:/sbin:/bin hosttune tune revert 2>&1); then
		printf '%s\n' "$out" | while IFS= read -r line; do echo "hosttune:   $line"; done
		return 0
	else
		rc=$?
	fi
	printf '%s\n' "$out" | while IFS= read -r line; do echo "hosttune:   $line"; done >&2
	echo "hosttune: the revert failed (exit $rc): kept $state, the record of the values to restore; install" \
		"hosttune again and run \`hosttune tune revert\` to finish it" >&2
	return 0
}
