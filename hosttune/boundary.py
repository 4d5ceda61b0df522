"""The trust boundary, as one table: every input that crosses it, the one gateway that handles it, the rule that
gateway applies, and the test that plays the other user (or the hostile value) against it.

hosttune runs as root on machines other users share. What reaches it from outside root's own files is listed here:

- ENV: each `HOSTTUNE_*` variable (hosttune/policy/names.py), and the other variables that pick a file or a
  directory hosttune reads or writes. They survive `su` and `sudo -E`, so as root each is another user's choice.
- OPTION: each command-line option (or argument) that names a path or a program.
- FILE: each file read from a directory another user might write (run directories, checkpoints, captures,
  configuration directories, handoffs, state files).
- VALUE: each value that reaches a privileged file or command (tune values, doctor's fix commands, a profile's env:).
- CALL: each place that starts a program, replaces this process, unpickles, or loads a torch file (the call sites
  tests/test_boundary.py finds by walking the code's syntax trees).

tests/test_boundary.py keeps the table and the code in step: a new `HOSTTUNE_*` name, a new option that names a
path or a program, or a new call site without a row fails it, and so does a row whose test does not exist or whose
input is gone. SECURITY.md states the same rules for people and points here.

Nothing here is imported at run time (the table is data for the meta-test and for readers), so it may grow freely.
"""

from dataclasses import dataclass
from typing import Dict, Tuple

ENV = "env var"
OPTION = "option"
FILE = "file read"
VALUE = "privileged value"
CALL = "call site"
KINDS = (ENV, OPTION, FILE, VALUE, CALL)


@dataclass(frozen=True)
class Row:
    """One input. `input` is how the meta-test finds it: a variable's name; an option as "<command> <--option>"
    (engine options as "engine --option"); a call site as "<path>::<function>" (qualified, "<module>" at top level);
    free text for FILE and VALUE rows. `test` is "tests/<file>.py::<test function>"."""

    input: str
    kind: str
    gateway: str
    rule: str
    test: str


_PROFILE_RULE = ("as root the file, every file of its base: chain and every directory above them must be root's "
                 "alone (trust.check_path), else one line naming the fix, exit 2; read by the resolved name, bounded")
_PROFILE_TEST = "tests/test_profile_load.py::test_root_refuses_another_users_profile_reached_any_way"
_JOB_RULE = ("set by hosttune's launcher for its own job (never a path); parsed as a bounded number or CPU list, a "
             "bad value is ignored or one line")

ROWS: Tuple[Row, ...] = (
    # ---- HOSTTUNE_* variables (hosttune/policy/names.py) ----------------------------------------------------------
    Row("HOSTTUNE_PROFILE", ENV, "hosttune/profile/load.py::load (trust.check_path)", _PROFILE_RULE, _PROFILE_TEST),
    Row("HOSTTUNE_PROFILE_PATH", ENV, "hosttune/profile/locate.py + load.py (trust.check_path)", _PROFILE_RULE,
        _PROFILE_TEST),
    Row("HOSTTUNE_ETC_DIR", ENV, "hosttune/policy/dirs.py::etc_dir, then profile/load.py (trust.check_path)",
        _PROFILE_RULE, _PROFILE_TEST),
    Row("HOSTTUNE_RUNTIME_DIR", ENV, "hosttune/launch/handoff.py::_runtime_base, hosttune/execcache/store.py "
        "(trust.problem + trust.private_dir)",
        "as root used only when its parent passes the trust rule and it is root's own 0700 directory; nothing is "
        "created under another user's directory, and handoffs then go to a fresh private directory elsewhere",
        "tests/test_boundary.py::test_a_runtime_dir_in_another_users_directory_gets_no_handoff_and_no_directory"),
    Row("HOSTTUNE_STATE_DIR", ENV, "hosttune/tune/core.py (trust.check_path)",
        "as root a state directory (or state file) another user owns or can write is refused in one line",
        "tests/test_tune_state.py::test_as_root_a_state_dir_another_user_can_write_is_refused"),
    Row("HOSTTUNE_LOG_DIR", ENV, "hosttune/monitor/sinks.py::trusted_dir (trust.problem)",
        "a log directory another user owns or can write is refused in one line; logs opened O_NOFOLLOW",
        "tests/test_monitor_sinks.py::test_daemon_refuses_a_log_dir_another_user_owns_in_one_line"),
    Row("HOSTTUNE_PYTHON", ENV, "hosttune/programs.py::resolve (from commands/train.py::candidates)",
        "as root the interpreter, every directory above it and every link on the way must be root's alone before it "
        "is run (the torch probe, every rank); the resolved path is what runs",
        "tests/test_programs.py::test_train_never_runs_another_users_interpreter_as_root"),
    Row("HOSTTUNE_STOP_GRACE", ENV, "hosttune/launch/supervise.py::_grace",
        "a number of seconds, else one line exit 2",
        "tests/test_boundary.py::test_job_variables_with_hostile_values_are_one_line_or_ignored"),
    Row("HOSTTUNE_EXEC_CACHE", ENV, "hosttune/execcache/ (store.py::cache_dir, replay.py)",
        "a switch (0 / explain); the cache itself is read only from the caller's private directory",
        "tests/test_exec_speed.py::test_a_users_cache_that_others_could_write_is_ignored"),
    Row("HOSTTUNE_HANDOFF", ENV, "hosttune/launch/handoff.py::check",
        "the file and its directory must be the caller's own, 0600/0700, opened without following links; else the "
        "rank is not started",
        "tests/test_handoff.py::test_shim_refuses_a_handoff_another_user_could_have_written"),
    Row("HOSTTUNE_LAUNCH_ID", ENV, "hosttune/launch/procfs.py, launch/hook.py",
        "a marker compared with the job's own; never a path",
        "tests/test_launch_guardian.py::test_a_ranks_setsid_child_without_the_marker_is_stopped"),
    Row("HOSTTUNE_LOCAL_RANK", ENV, "hosttune/launch/verify.py, launch/rankvars.py", _JOB_RULE,
        "tests/test_boundary.py::test_job_variables_with_hostile_values_are_one_line_or_ignored"),
    Row("HOSTTUNE_LOCAL_WORLD_SIZE", ENV, "hosttune/launch/verify.py, launch/rankvars.py", _JOB_RULE,
        "tests/test_boundary.py::test_job_variables_with_hostile_values_are_one_line_or_ignored"),
    Row("HOSTTUNE_SPAWN_PROCS", ENV, "hosttune/launch/hook.py::spawn_share", _JOB_RULE,
        "tests/test_boundary.py::test_job_variables_with_hostile_values_are_one_line_or_ignored"),
    Row("HOSTTUNE_JOB_CPUS", ENV, "hosttune/launch/hook.py::_allowed (cpulist.parse_cpulist, capped)", _JOB_RULE,
        "tests/test_boundary.py::test_job_variables_with_hostile_values_are_one_line_or_ignored"),
    Row("HOSTTUNE_NUM_WORKERS", ENV, "hosttune/engine/data.py::loader_settings", "an integer, else one line",
        "tests/test_engine.py::test_loader_settings_env_then_config"),
    Row("HOSTTUNE_PIN_MEMORY", ENV, "hosttune/engine/data.py::loader_settings", "an integer flag, else one line",
        "tests/test_engine.py::test_loader_settings_env_then_config"),
    Row("HOSTTUNE_PREFETCH_FACTOR", ENV, "hosttune/engine/data.py::loader_settings", "an integer, else one line",
        "tests/test_engine.py::test_loader_settings_env_then_config"),
    Row("HOSTTUNE_PERSISTENT_WORKERS", ENV, "hosttune/engine/data.py::loader_settings",
        "an integer flag, else one line", "tests/test_engine.py::test_loader_settings_env_then_config"),
    Row("HOSTTUNE_DETERMINISTIC", ENV, "hosttune/engine/data.py::deterministic_setting",
        "an integer flag, else one line",
        "tests/test_engine.py::test_loader_settings_env_then_config"),
    Row("HOSTTUNE_FAKE_NVML", ENV, "none: read only by tests/fakes/pynvml.py, never by hosttune/",
        "no module of hosttune/ reads it; the fake NVML is importable only where a test puts tests/fakes on sys.path",
        "tests/test_boundary.py::test_fake_nvml_is_read_by_no_module_of_hosttune"),
    # ---- other variables that pick a file, a directory or a program ------------------------------------------
    Row("XDG_CONFIG_HOME", ENV, "hosttune/profile/locate.py + load.py (trust.check_path)", _PROFILE_RULE,
        _PROFILE_TEST),
    Row("XDG_RUNTIME_DIR", ENV, "hosttune/launch/handoff.py::_bases (trust.problem)",
        "as root used only when root alone can write it (after `su` it is the user's)",
        "tests/test_handoff.py::test_handoff_never_goes_into_another_users_runtime_dir"),
    Row("XDG_CACHE_HOME", ENV, "hosttune/execcache/store.py::cache_dir (trust rule on the cache directory and entry)",
        "a cache another user could write is ignored, never trusted",
        "tests/test_exec_speed.py::test_a_users_cache_that_others_could_write_is_ignored"),
    Row("PATH", ENV, "hosttune/programs.py::trusted_path_dirs",
        "as root programs are looked up only in PATH directories root alone can write",
        "tests/test_detect_hostio.py::test_planted_programs_in_a_user_owned_path_dir_are_not_run_as_root"),
    Row("PYTHONPATH", ENV, "hosttune/trust.py::interpreter_env",
        "as root dropped from every interpreter hosttune starts unless each entry passes the trust rule",
        "tests/test_detect_torchenv.py::test_pythonpath_naming_another_users_directory_is_dropped_as_root"),
    Row("HOSTTUNE_HANG_DIR", ENV, "hosttune/launch/hook.py::arm_stacks",
        "set by hosttune's launcher for its own job (exec --hang-timeout); a rank creates its stacks file (O_EXCL, "
        "no-follow, 0600) only in a directory opened without following a link that is its user's private one "
        "(owner = euid, mode 0700); anything else arms nothing",
        "tests/test_launch_hang.py::test_root_arms_nothing_in_a_directory_the_other_user_owns"),
    Row("RUNTIME_DIRECTORY", ENV, "hosttune/monitor/daemon.py (the monitor's own runtime directory)",
        "systemd's value for the monitor unit; never root's /run/hosttune, a relative value falls back",
        "tests/test_monitor_tune.py::test_the_monitors_runtime_dir_comes_from_systemd_and_is_never_roots"),
    Row("PYTHON_EXEC", ENV, "hosttune/programs.py::resolve (from launch/pythons.py::parent_python)",
        "torchrun's interpreter override, kept by su/sudo -E: as root it must be root's alone or the rank is not "
        "started", "tests/test_shim.py::test_as_root_python_exec_naming_another_users_file_is_refused"),
    # ---- options that name a path or a program ----------------------------------------------------------------
    Row("doctor --python", OPTION, "hosttune/programs.py::resolve (commands/doctor.py, before anything runs)",
        "as root the interpreter must be root's alone (one line, exit 2, before it runs); a bare name is looked up "
        "in trusted PATH directories only; the probe runs isolated (-I) in /",
        "tests/test_programs.py::test_another_users_python_named_by_option_is_refused_before_it_runs"),
    Row("doctor --data", OPTION, "hosttune/doctor/checks (os.statvfs, kind of path)",
        "only looked at (statvfs, kind); a device, FIFO or /proc file is not a data path",
        "tests/test_doctor_cli.py::test_cli_data_path_kind"),
    Row("doctor --root", OPTION, "hosttune/trust.py::host_tree, then hosttune/detect/hostio.py::HostIO",
        "every link resolved inside the tree; regular files only, bounded, non-blocking",
        "tests/test_detect_hostio.py::test_hostile_root_tree_is_read_without_hang_crash_or_escape"),
    Row("env --profile", OPTION, "hosttune/profile/load.py (trust.check_path)", _PROFILE_RULE, _PROFILE_TEST),
    Row("env --root", OPTION, "hosttune/trust.py::host_tree, then hosttune/detect/hostio.py::HostIO",
        "every link resolved inside the tree; regular files only, bounded, non-blocking",
        "tests/test_detect_hostio.py::test_hostio_resolves_links_inside_the_root_only"),
    Row("exec --profile", OPTION, "hosttune/profile/load.py (trust.check_path)", _PROFILE_RULE, _PROFILE_TEST),
    Row("exec --root", OPTION, "hosttune/trust.py::host_tree, then hosttune/detect/hostio.py::HostIO",
        "every link resolved inside the tree; regular files only, bounded, non-blocking",
        "tests/test_detect_hostio.py::test_hostio_resolves_links_inside_the_root_only"),
    Row("exec COMMAND", OPTION, "hosttune/programs.py::resolve (launch/supervise.py, check=False: root's own choice)",
        "the caller's own choice, run as named when given as a path (sudo's semantics); a bare name is looked up "
        "only in PATH directories root alone can write (a PATH kept by sudo -E never picks another user's program)",
        "tests/test_programs.py::test_exec_as_root_never_runs_another_users_program_found_on_path"),
    Row("autotune COMMAND", OPTION, "hosttune/programs.py::popen of programs.own_argv (autotune/runner.py runs "
        "each trial and --dry-run's plan as `hosttune exec --profile FILE -- COMMAND`), then exec's own "
        "programs.resolve",
        "each trial is a child `hosttune exec` of the caller's own command: exec COMMAND's rule; that hosttune is "
        "this package loaded by path (never the working directory's or PYTHONPATH's; -I as root), on an "
        "interpreter resolved and checked by programs.popen",
        "tests/test_autotune.py::test_as_root_autotune_dry_run_in_another_users_directory_never_imports_their_"
        "hosttune"),
    Row("autotune --output", OPTION, "hosttune/profile/generate.py::write (fsio atomic, private parents)",
        "written atomically (an earlier measured profile is replaced; without --output the winner goes to the "
        "job's measured overlay, written the same way); parents made private; as root a profile "
        "left where another user can write is refused by every later load (trust.check_path)",
        "tests/test_profile.py::test_profile_generate_under_umask_000_makes_private_parents"),
    Row("facts --root", OPTION, "hosttune/trust.py::host_tree, then hosttune/detect/hostio.py::HostIO",
        "every link resolved inside the tree; regular files only, bounded, non-blocking",
        "tests/test_detect_hostio.py::test_hostile_root_tree_is_read_without_hang_crash_or_escape"),
    Row("facts --python", OPTION, "hosttune/programs.py::resolve (commands/facts.py, before anything runs)",
        "as root the interpreter must be root's alone (one line, exit 2, before it runs); a bare name is looked up "
        "in trusted PATH directories only; the probe runs isolated (-I) in /",
        "tests/test_programs.py::test_another_users_python_named_by_option_is_refused_before_it_runs"),
    Row("facts --capture", OPTION, "hosttune/capture.py::capture (fsio.atomic_writer, private work directory)",
        "a new private directory, or an archive that never replaces an existing file without --force; links are "
        "never followed",
        "tests/test_capture.py::test_capture_refuses_to_replace_an_existing_archive_in_one_line"),
    Row("monitor --log-dir", OPTION, "hosttune/monitor/sinks.py::trusted_dir",
        "a directory another user owns or can write is refused; logs opened O_NOFOLLOW",
        "tests/test_monitor_sinks.py::test_daemon_refuses_a_log_dir_another_user_owns_in_one_line"),
    Row("monitor --textfile-dir", OPTION, "hosttune/monitor/sinks.py::trusted_dir (fsio atomic write)",
        "a directory another user owns or can write is refused; the textfile is replaced atomically",
        "tests/test_monitor_sinks.py::test_sinks_refuse_a_directory_another_user_owns_and_follow_none_of_their_links"),
    Row("job records (/run/hosttune-jobs, beside the runtime directory)", FILE,
        "hosttune/monitor/jobs.py::Records (fsio.read_fd_bounded)",
        "every user's exec writes one; the monitor reads them only from a directory root owns (sticky if others may "
        "write) under directories that pass the trust rule; a record is a regular file opened no-follow and "
        "non-blocking, one link, at most 4 KiB of JSON whose every field is validated and must name its file name's "
        "pid and start time; its user is the file's owner, never its content; it counts only while that pid runs "
        "with that start time and belongs to that owner; a claimed SLURM_JOB_ID is shown under the owner's name and "
        "dropped when another user holds or claims the id; the reader executes, writes and removes nothing",
        "tests/test_monitor_jobrecords.py::test_another_users_records_claim_only_their_own_live_processes_under_their_"
        "own_name"),
    Row("the job records directory (exec writes there)", FILE, "hosttune/jobrecord.py::begin (fsio.atomic_write)",
        "written only into a directory owned by root or the caller, sticky if others can write it, under trusted "
        "directories; root makes it 1777 only under a trusted parent; an O_EXCL temp file linked to a fresh random "
        "name, never replacing a name another user took; the sweep removes only the caller's own records",
        "tests/test_jobrecord.py::test_begin_writes_nothing_where_the_directory_is_not_usable"),
    Row("the kubelet's pod-resources reply", FILE, "hosttune/monitor/podresources.py::PodResources",
        "asked only on a socket whose directory passes the trust rule; at most 16 MiB; decoded by hand; pod and "
        "namespace names must match RFC 1123, device ids a UUID's characters; anything else drops the whole reply "
        "(pods keep their UIDs)",
        "tests/test_monitor_podresources.py::test_a_socket_in_another_users_directory_is_not_asked"),
    Row("image folder files (engine image_source=folder, data_path)", FILE,
        "hosttune/engine/images.py::ImageFolder.read (fsio.read_bounded, no-follow), scan_folder; "
        "decoders.py::check_pixels",
        "the scan refuses links, FIFOs/devices and entries other than .jpg/.jpeg/.png; each file read no-follow, at "
        "most 64 MiB; a header announcing more than 64 Mpx refused before decoding; only the JPEG/PNG parsers see "
        "the bytes; every problem one line, exit 2",
        "tests/test_engine_images.py::test_a_bad_folder_is_one_line_before_training"),
    Row("run dir: metrics.csv and tensorboard/ (metrics_csv, tensorboard; continued on --resume)", FILE,
        "hosttune/engine/sinks.py::CsvSink._continue (fsio.read_bounded no-follow, fsio.atomic_write, "
        "fsio.open_append_nofollow), TensorBoardSink",
        "the CSV is read back no-follow, at most 256 MiB, parsed as CSV text only, rewritten through a private temp "
        "and appended no-follow; a link or file at tensorboard/ is refused before anything is written; each problem "
        "one line",
        "tests/test_engine_metric_sinks.py::test_a_link_at_the_csv_or_the_tensorboard_directory_is_refused_and_"
        "nothing_is_written_through_it"),
    Row("monitor --config", OPTION, "hosttune/monitor/config.py::load (fsio.read_user_text, yamlio)",
        "a regular file, bounded, no FIFO hang; YAML through the one loader; bad content is one line",
        "tests/test_monitor_config.py::test_monitor_yaml_that_is_a_fifo_is_one_line_not_a_hang"),
    Row("monitor report --log-dir", OPTION, "hosttune/monitor/logread.py (no-follow reads)",
        "a link, FIFO or device at a log name is refused in one line",
        "tests/test_monitor_report.py::test_report_refuses_a_fifo_or_link_at_a_log_name_in_one_line"),
    Row("monitor report --plot", OPTION, "hosttune/monitor/report.py::write_plot (fsio.atomic_writer)",
        "written through a private temp beside the target, never through a predictable name",
        "tests/test_monitor_report.py::test_plot_is_written_atomically_through_no_predictable_temp_name"),
    Row("monitor report --config", OPTION, "hosttune/monitor/config.py::load (fsio.read_user_text, yamlio)",
        "a regular file, bounded, no FIFO hang; bad content is one line",
        "tests/test_monitor_config.py::test_bad_monitor_yaml_is_one_line_and_exit_2"),
    Row("monitor setup-textfile --config", OPTION, "hosttune/monitor/config.py::load (fsio.read_user_text, yamlio)",
        "a regular file, bounded, no FIFO hang; bad content is one line",
        "tests/test_monitor_config.py::test_bad_monitor_yaml_is_one_line_and_exit_2"),
    Row("profile generate --output", OPTION, "hosttune/profile/generate.py (fsio atomic, private parents)",
        "written atomically; an existing file is kept unless --force; parents made private",
        "tests/test_profile.py::test_profile_generate_under_umask_000_makes_private_parents"),
    Row("profile generate --base", OPTION, "hosttune/profile/load.py (trust.check_path)", _PROFILE_RULE,
        _PROFILE_TEST),
    Row("profile generate --root", OPTION, "hosttune/trust.py::host_tree, then hosttune/detect/hostio.py::HostIO",
        "every link resolved inside the tree; regular files only, bounded, non-blocking",
        "tests/test_detect_hostio.py::test_hostio_resolves_links_inside_the_root_only"),
    Row("profile show NAME", OPTION, "hosttune/profile/load.py (trust.check_path)", _PROFILE_RULE, _PROFILE_TEST),
    Row("profile show --root", OPTION, "hosttune/trust.py::host_tree, then hosttune/detect/hostio.py::HostIO",
        "every link resolved inside the tree; regular files only, bounded, non-blocking",
        "tests/test_detect_hostio.py::test_hostio_resolves_links_inside_the_root_only"),
    Row("train --profile", OPTION, "hosttune/profile/load.py (trust.check_path)", _PROFILE_RULE, _PROFILE_TEST),
    Row("train --python", OPTION, "hosttune/programs.py::resolve (from commands/train.py::candidates)",
        "as root the interpreter must pass the trust rule before it is run (the probe, every rank), and is run by "
        "its resolved path", "tests/test_programs.py::test_train_never_runs_another_users_interpreter_as_root"),
    Row("tune apply --root", OPTION, "hosttune/trust.py::host_tree (as root, a tree written into passes "
        "the trust rule), then hosttune/tune/rootfs.py::Tree",
        "as root, a tree another user owns or could change (or one below such a directory) is refused before "
        "anything is written; every read and write walks the tree with O_NOFOLLOW",
        "tests/test_commands_root.py::test_as_root_tune_never_writes_into_another_users_tree"),
    Row("tune revert --root", OPTION, "hosttune/trust.py::host_tree (as root, a tree written into passes "
        "the trust rule), then hosttune/tune/rootfs.py::Tree",
        "every write walks the tree with O_NOFOLLOW; revert writes only each tunable's own paths",
        "tests/test_tune_state.py::test_revert_writes_only_the_paths_each_tunable_owns"),
    Row("tune verify --root", OPTION, "hosttune/trust.py::host_tree (as root, a tree written into passes "
        "the trust rule), then hosttune/tune/rootfs.py::Tree",
        "every read walks the tree with O_NOFOLLOW",
        "tests/test_tune.py::test_a_link_in_the_tree_never_leads_a_write_out"),
    Row("engine --config", OPTION, "hosttune/engine/config.py::read_config_file (fsio.read_user_text, yamlio)",
        "a regular file, bounded; hostile YAML/JSON is one line",
        "tests/test_engine_config.py::test_hostile_config_files_are_one_line_through_the_engine"),
    Row("engine --export", OPTION, "hosttune/engine/export.py (fsio.atomic_writer; checkpoint gateways)",
        "reads the run's checkpoint through the checkpoint gateways; every file written through a private temp "
        "beside the target (the ONNX file serialized and checked in memory first), no link followed",
        "tests/test_engine_export.py::test_an_export_into_another_users_directory_follows_no_planted_link"),
    Row("engine --run-dir", OPTION, "hosttune/engine/checkpoint.py, engine/shard.py",
        "checkpoints read from it go through torch.load(weights_only=True) or the one unpickler",
        "tests/test_engine_checkpoint.py::test_a_planted_pickle_is_not_executed_and_the_resume_falls_back"),
    # ---- files read from directories another user might write ---------------------------------------------
    Row("run dir: checkpoint files (--resume, --export)", FILE, "hosttune/engine/checkpoint.py::_read",
        "torch.load(weights_only=True); a planted, truncated or foreign checkpoint falls back or is one line",
        "tests/test_engine_checkpoint.py::test_a_planted_pickle_is_not_executed_and_the_resume_falls_back"),
    Row("run dir: sharded checkpoint metadata (dcp/.metadata)", FILE, "hosttune/unpickle.py (exact pairs)",
        "unpickled against an exact (module, name) allow-list; a dotted name is refused",
        "tests/test_engine_shard.py::test_dcp_metadata_pickle_from_the_checkpoint_is_never_run"),
    Row("engine config file", FILE, "hosttune/engine/config.py::read_config_file",
        "fsio.read_user_text: regular, bounded, UTF-8; yamlio",
        "tests/test_engine_config.py::test_hostile_config_files_are_one_line_through_hosttune_train"),
    Row("profiles (every file of a base: chain)", FILE, "hosttune/profile/load.py", _PROFILE_RULE, _PROFILE_TEST),
    Row("measured overlay (measured/KEY.yaml beside the generated profiles: XDG_CONFIG_HOME, HOSTTUNE_ETC_DIR)", FILE,
        "hosttune/profile/measured.py::read, then profile/load.py (trust.check_path)",
        _PROFILE_RULE + "; exec refuses it like a profile (one line, exit 2; --no-measured runs without it); "
        "`profile show` lists it as REFUSED",
        "tests/test_profile_measured.py::test_as_root_another_users_overlay_is_refused"),
    Row("monitor.yaml", FILE, "hosttune/monitor/config.py::load", "fsio.read_user_text; yamlio; one line",
        "tests/test_monitor_config.py::test_monitor_yaml_that_is_a_fifo_is_one_line_not_a_hang"),
    Row("the handoff file", FILE, "hosttune/launch/handoff.py::check",
        "the caller's own private file in a private directory, opened without following links",
        "tests/test_handoff.py::test_shim_refuses_a_handoff_another_user_could_have_written"),
    Row("the exec start-up cache", FILE, "hosttune/execcache/store.py::load",
        "only the caller's private single-link file in a private directory; anything else ignored",
        "tests/test_exec_speed.py::test_load_trusts_only_the_callers_private_file"),
    Row("tune state file", FILE, "hosttune/tune/core.py, tune/model.py",
        "as root a state directory another user can write is refused; a wrong shape is one line",
        "tests/test_tune_state.py::test_a_state_file_of_the_wrong_shape_is_one_line_and_exit_2"),
    Row("captured trees (--root)", FILE, "hosttune/detect/hostio.py::HostIO",
        "links resolved inside the tree; regular files only, bounded, non-blocking",
        "tests/test_detect_hostio.py::test_hostile_root_tree_is_read_without_hang_crash_or_escape"),
    Row("monitor logs (report)", FILE, "hosttune/monitor/logread.py",
        "a link, FIFO or device at a log name is refused; malformed lines counted, never a traceback",
        "tests/test_monitor_report.py::test_report_counts_malformed_deep_and_overlong_lines"),
    Row("/proc/PID/cgroup of a GPU's processes", FILE, "hosttune/monitor/jobs.py",
        "the monitor (may run as root) reads it for each process NVML lists on a GPU, bounded (64 KiB) and no-follow "
        "by fd; the text only picks a job id by pattern (Slurm, kubepods, container id); a path below a user's own "
        "user@UID.service (delegated to them) is never a Slurm job or pod; nothing is executed or written from it",
        "tests/test_monitor_jobs.py::test_cgroup_paths_as_slurm_the_kubelet_and_container_runtimes_make_them"),
    Row("the hang directory's stacks files", FILE, "hosttune/launch/hang.py::Watch (fsio.read_bounded, no-follow)",
        "read back, bounded, through the descriptor of the 0700 directory hosttune made with mkdir (never one that "
        "was there): a rename or a link swapped in by the directory's owner changes nothing read, written or removed",
        "tests/test_launch_hang.py::test_a_hang_directory_swapped_after_the_start_changes_nothing_hosttune_reads_or_removes"),
    Row("mpirun --hostfile/-machinefile named in exec COMMAND", FILE,
        "hosttune/launch/launchers/mpirun.py::_hosts (fsio.read_user_text)",
        "bounded UTF-8 regular file; only each line's first word is used, as a host name for a route lookup; "
        "unreadable is a note",
        "tests/test_launch_mpirun.py::test_an_unreadable_hostfile_names_no_endpoint_and_says_so"),
    # ---- values that reach a privileged file or command ----------------------------------------------------
    Row("a container runtime's name (doctor's fix text)", VALUE, "hosttune/detect/container.py (through HostIO)",
        "read from /run/systemd/container, PID 1's container= and .containerenv's engine=; kept only as a plain word "
        "([A-Za-z0-9._-], at most 32 characters), else 'unknown'; /proc/1/environ is parsed for container= alone",
        "tests/test_detect_container.py::test_a_runtime_name_is_a_plain_word_or_unknown"),
    Row("a profile's env:", VALUE, "hosttune/trust.py::check_env_value",
        "as root an allow-list: code-valued variables refused, library variables must name root's ELF files, path "
        "variables only root's paths, any other value naming a path refused",
        "tests/test_profile_load.py::test_root_refuses_code_loading_env_naming_another_users_files"),
    Row("a plan's env at rank start (shim, hook)", VALUE, "hosttune/launch/rank.py::checked_env",
        "every variable the plan sets is checked again right before exec",
        "tests/test_shim.py::test_shim_as_root_refuses_a_plan_env_pointing_at_another_users_files"),
    Row("the rank command the shim starts (torchrun's argv)", VALUE, "hosttune/programs.py::execve (from shim.py)",
        "a bare name is looked up on the rank environment's PATH, as root on its trusted directories only; a "
        "command that cannot run exits 126/127 as a shell would",
        "tests/test_shim.py::test_as_root_a_bare_rank_command_is_never_taken_from_another_users_path_dir"),
    Row("a profile's tune: values", VALUE, "hosttune/profile/settings.py (a strict pattern per tune setting)",
        "each text value matches its setting's pattern; the file writers refuse newlines too",
        "tests/test_profile_settings.py::test_the_memlock_newline_never_reaches_limits_d"),
    Row("tune state values written back at revert/boot", VALUE, "hosttune/tune/rootfs.py::check_line",
        "a saved value that would break a file is refused",
        "tests/test_tune_state.py::test_a_saved_value_that_would_break_a_file_is_refused_at_boot"),
    Row("doctor fix commands", VALUE, "hosttune/doctor/fixes.py",
        "built only from values that match a strict pattern, shell-quoted",
        "tests/test_doctor_fixes.py::test_fix_commands_never_carry_an_injected_version_id"),
    # ---- call sites: programs started, processes replaced, pickles and torch files loaded -----------------
    Row("hosttune/programs.py::run", CALL, "hosttune/programs.py (the gateway itself: subprocess.run)",
        "argv[0] resolved first (trusted PATH directories as root; the file, its directories and links root's "
        "alone); the resolved path is what runs",
        "tests/test_programs.py::test_as_root_a_program_another_user_could_change_is_refused"),
    Row("hosttune/programs.py::popen", CALL, "hosttune/programs.py (the gateway itself: subprocess.Popen)",
        "argv[0] resolved and checked as for run",
        "tests/test_programs.py::test_as_root_a_program_another_user_could_change_is_refused"),
    Row("hosttune/programs.py::execve", CALL, "hosttune/programs.py (the gateway itself: os.execve)",
        "argv[0] resolved and checked as for run (train's interpreter, every rank)",
        "tests/test_programs.py::test_train_never_runs_another_users_interpreter_as_root"),
    Row("hosttune/engine/quantize.py::check", CALL, "torch.jit.load of the int8 file's bytes, in memory",
        "loads only the bytes it just serialized (TorchScript's own loader, no Python pickle), before the atomic "
        "writer publishes them; nothing is read back from the output directory",
        "tests/test_engine_int8.py::test_an_int8_file_that_is_off_fails_the_check_and_the_cli"),
    Row("hosttune/engine/oom.py::dump_memory_snapshot", CALL,
        "pickle.dumps of torch.cuda.memory._snapshot() (writes, never loads), then fsio.atomic_write",
        "serializes the allocator's own snapshot (plain dicts and lists) into the run dir through a private temp, no "
        "link followed; nothing is unpickled",
        "tests/test_engine_oom_snapshot.py::test_an_oom_writes_the_snapshot_and_the_report_names_it_and_the_viewer"),
    Row("hosttune/engine/checkpoint.py::_read", CALL, "torch.load(weights_only=True)",
        "no pickled objects are needed; a planted pickle never runs",
        "tests/test_engine_checkpoint.py::test_a_planted_pickle_is_not_executed_and_the_resume_falls_back"),
    Row("hosttune/engine/shard.py::_safe_classes.SafePlanner.load_bytes", CALL, "torch.load(weights_only=True)",
        "DCP's byte items through weights_only loading",
        "tests/test_engine_shard.py::test_dcp_metadata_pickle_from_the_checkpoint_is_never_run"),
    Row("hosttune/unpickle.py::RestrictedUnpickler", CALL, "hosttune/unpickle.py (the gateway itself)",
        "imports only exact (module, name) pairs; a dotted name or a persistent id is refused",
        "tests/test_engine_shard.py::test_dcp_metadata_pickle_from_the_checkpoint_is_never_run"),
    Row("hosttune/engine/shard.py::_dcp_load", CALL, "torch.distributed.checkpoint.load with SafeReader/SafePlanner",
        "the .metadata is read first through hosttune/unpickle.py (exact pairs); DCP's reader and planner are "
        "replaced so nothing is unpickled or torch.load()ed without weights_only, and data files open no-follow",
        "tests/test_engine_shard.py::test_a_planted_dcp_metadata_in_another_users_run_dir_runs_nothing_as_root"),
    Row("hosttune/engine/export.py::check_program", CALL, "torch.export.load of the model.pt2 just written",
        "reads back the file the atomic writer just published to compare it with the checkpoint's model",
        "tests/test_engine_export.py::test_a_tampered_export_fails_the_comparison"),
    Row("hosttune/execcache/store.py::load", CALL, "marshal.loads of a cache entry",
        "only the caller's own private single-link regular file; the entry must have the exact shape of plain "
        "values the recorder writes (a code object is refused)",
        "tests/test_exec_speed.py::test_load_trusts_only_the_callers_private_file"),
    Row("hosttune/execcache/replay.py::_replay", CALL, "os.execve of the path programs.resolve gave at record time",
        "replayed only from the caller's private cache when every input (the program, each link and directory on "
        "the way) is unchanged; the recorder keeps only an absolute path the gateway resolved",
        "tests/test_execcache.py::test_a_replay_execs_the_path_the_gateway_resolved_without_importing_it"),
)

BY_INPUT: Dict[str, Row] = {r.input: r for r in ROWS}

__all__ = ["CALL", "ENV", "FILE", "KINDS", "OPTION", "ROWS", "Row", "VALUE", "BY_INPUT"]
