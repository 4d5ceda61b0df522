"""The one YAML loader for files a user hands hosttune (profiles, engine configs, monitor.yaml).

Safe tags only; one parse (compose, then construct from the same node tree); and what a hostile 700-byte file
would otherwise turn into 30 s and 1.4 GB is refused before anything is built: an alias of a list or mapping (the
"billion laughs"; an alias of a plain value is fine), a duplicate key (YAML says keys are unique; PyYAML keeps
the last silently), nesting deeper than MAX_DEPTH. Every error is one `UserError` line, `FILE:LINE: problem`,
and every value quoted in a message goes through `brief()`, so no message grows with the input.
"""

from typing import Any, Dict, List, Optional, Tuple

import yaml

from hosttune.errors import UserError

MAX_DEPTH = 32
_COMPOSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def brief(value: Any, limit: int = 60) -> str:
    """repr(value) cut to `limit` characters, safe for one line on a terminal. Containers are not walked in full:
    a huge or self-similar value costs O(limit) to show."""
    if isinstance(value, (dict, list, tuple, set)):
        text = f"<{type(value).__name__} of {len(value)} item(s)>"
    else:
        text = repr(value) if not isinstance(value, str) or len(value) <= 4 * limit else repr(value[: 4 * limit])
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _line(mark: Any) -> Optional[int]:
    return mark.line + 1 if mark is not None else None


def _walk(root: yaml.Node, where: str) -> None:
    """Refuse aliased collections, duplicate keys and deep nesting, without recursion."""
    seen: set = set()
    stack: List[Tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            continue
        if id(node) in seen:
            raise UserError(f"{where}:{_line(node.start_mark)}: a YAML anchor of a list or mapping is used again by "
                            f"an alias; write the values out (aliases of lists/mappings are refused: they can expand "
                            f"without bound)")
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise UserError(f"{where}:{_line(node.start_mark)}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, yaml.MappingNode):
            keys: Dict[Any, int] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    first = keys.get((k.tag, k.value))
                    if first is not None:
                        raise UserError(f"{where}:{k.start_mark.line + 1}: duplicate key {brief(k.value)} "
                                        f"(first at line {first})")
                    keys[(k.tag, k.value)] = k.start_mark.line + 1
                else:
                    stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, depth + 1) for v in node.value)


def load(text: str, where: str) -> Tuple[Any, Optional[yaml.Node]]:
    """(data, node tree) of one YAML document; (None, None) when empty. Raises UserError only."""
    try:
        node = yaml.compose(text, Loader=_COMPOSER)
        if node is None:
            return None, None
        _walk(node, where)
        data = yaml.SafeLoader("").construct_document(node)
    except UserError:
        raise
    except yaml.MarkedYAMLError as exc:
        # The context mark is where the broken construct starts (the problem mark is often the end of the file).
        mark = exc.context_mark or exc.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = ": ".join(x.strip() for x in (exc.context, exc.problem) if x) or "invalid YAML"
        if exc.problem_mark is not None and exc.problem_mark is not mark:
            problem += f" (line {exc.problem_mark.line + 1})"
        raise UserError(f"{where}{line}: not valid YAML: {brief(problem, 200)[1:-1]}") from None
    except RecursionError:
        raise UserError(f"{where}: not valid YAML: nested too deeply") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, AttributeError) as exc:
        # PyYAML raises ValueError/OverflowError from some scalar constructors (dates, huge numbers).
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"{where}: not valid YAML: {brief(msg, 200)[1:-1]}") from None
    return data, node


def load_mapping(text: str, where: str, what: str) -> Tuple[Dict[str, Any], Optional[yaml.Node]]:
    """A document that must be a mapping (empty -> {})."""
    data, node = load(text, where)
    if data is None:
        return {}, node
    if not isinstance(data, dict):
        raise UserError(f"{where}:1: {what} must be a YAML mapping of settings, not {type(data).__name__}")
    return data, node


def key_lines(node: Any) -> Dict[str, int]:
    """key -> 1-based line of each key of a YAML mapping node (for error messages)."""
    out: Dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for k, _v in node.value:
            if isinstance(k, yaml.ScalarNode):
                out.setdefault(str(k.value), k.start_mark.line + 1)
    return out


def sub_lines(node: Any, key: str) -> Dict[str, int]:
    """key_lines of the mapping under `key`."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return key_lines(v)
    return {}
