"""hosttune.detect.tuned pins (issue 21, practice round HDET8): parse_conf on commented-out settings (`#` or `;`,
even holding `=`) and on indented lines (stripped: a header or a setting all the same)."""

from hosttune.detect import tuned as T


def test_parse_conf_commented_out_settings_and_indented_lines() -> None:
    text = ("# vm.swappiness = 60\n"
            "; governor = powersave\n"
            "  [main]\n"
            "    include = throughput-performance\n"
            "  ;replace = 1\n"
            "\t# summary = old\n"
            "[sysctl]\n"
            ";vm.swappiness=30\n"
            "  vm.swappiness = 10  \n"
            "#kernel.numa_balancing=1\n")
    conf = T.parse_conf(text)
    assert conf == {"main": {"include": "throughput-performance"}, "sysctl": {"vm.swappiness": "10"}}
    assert list(conf) == ["main", "sysctl"]
    assert T.includes(conf) == ["throughput-performance"]
