"""Key derivation against the project's one vectors file (clients/key-vectors.json), computed by an
independent JavaScript implementation and held to by the Java client and the ledger too."""

import json
import os
import unittest

from effectledger import KeyDerivationError, KeyRules, StepContext, derive
from effectledger.keys import canonicalize, number, parse

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "key-vectors.json")


def load_vectors():
    with open(VECTORS, encoding="utf-8") as f:
        return json.load(f)


class VectorsTest(unittest.TestCase):
    def test_every_shared_vector(self):
        vectors = load_vectors()
        self.assertGreaterEqual(len(vectors), 61)
        for v in vectors:
            with self.subTest(v["name"]):
                step = StepContext(v["tenant"], v["runId"], v["stepId"], v["scope"])
                rules = KeyRules(ignore=v["volatile"], require=v["required"])
                if "error" in v:
                    with self.assertRaises(KeyDerivationError) as refused:
                        derive(step, v["tool"], v["arguments"], rules)
                    self.assertEqual(v["error"], refused.exception.code)
                else:
                    got = derive(step, v["tool"], v["arguments"], rules)
                    self.assertEqual(v["canonicalArguments"], got.canonical_arguments)
                    self.assertEqual(v["argumentsHash"], got.arguments_hash)
                    self.assertEqual(v["key"], got.key)

    def test_a_dict_gives_the_key_of_its_json_text(self):
        v = load_vectors()[0]  # charge
        step = StepContext(v["tenant"], v["runId"], v["stepId"], v["scope"])
        rules = KeyRules(ignore=v["volatile"], require=v["required"])
        as_dict = json.loads(v["arguments"])
        self.assertEqual(v["key"], derive(step, v["tool"], as_dict, rules).key)

    def test_a_python_int_above_2_53_is_a_double_as_in_every_client(self):
        step = StepContext("acme", "run", "step")
        self.assertEqual(
            derive(step, "lookup", {"id": 9007199254740993}).key,
            derive(step, "lookup", {"id": 9007199254740992}).key,
        )

    def test_nan_and_infinity_in_a_dict_are_refused(self):
        step = StepContext("acme", "run", "step")
        for bad in (float("nan"), float("inf")):
            with self.assertRaises(KeyDerivationError) as refused:
                derive(step, "math", {"n": bad})
            self.assertEqual("ARGUMENTS_NOT_JSON", refused.exception.code)


class CanonicalizationTest(unittest.TestCase):
    def test_numbers_as_ecmascript_writes_them(self):
        cases = {
            0.0: "0",
            -0.0: "0",
            1.0: "1",
            -1.5: "-1.5",
            0.1: "0.1",
            1e16: "10000000000000000",
            1e20: "100000000000000000000",
            1e21: "1e+21",
            1e-6: "0.000001",
            1e-7: "1e-7",
            123e-20: "1.23e-18",
            5e-324: "5e-324",
            1.7976931348623157e308: "1.7976931348623157e+308",
            0.30000000000000004: "0.30000000000000004",
            333333333.33333329: "333333333.3333333",
            1e23: "1e+23",
            4.35: "4.35",
            2 ** 53: "9007199254740992",
        }
        for value, text in cases.items():
            with self.subTest(text):
                self.assertEqual(text, number(value))

    def test_members_sorted_by_utf16_code_units(self):
        self.assertEqual(
            '{"\ud7ff":4,"😀":2,"\ue000":1,"\uffff":3}',
            canonicalize(parse('{"\\ue000":1,"\\ud83d\\ude00":2,"\\uffff":3,"\\ud7ff":4}')),
        )

    def test_only_quote_backslash_and_controls_are_escaped(self):
        self.assertEqual(
            '"\\u0000\\u001f\\b\\t\\n\\f\\r\\"\\\\/\u007f\u2028é😀"',
            canonicalize("\u0000\u001f\b\t\n\f\r\"\\/\u007f\u2028é😀"),
        )

    def test_refuses_what_is_not_i_json(self):
        for text in ('{"n":1e400}', '{"n":-1e999}', '{"n":NaN}', '{"n":Infinity}', '{"s":"\\ud800"}',
                     '{"\\udc00":1}', '{"x":1} x', '{"x":01}', "", "   ", '{"a":' * 101 + "1" + "}" * 101):
            with self.subTest(text[:30]):
                with self.assertRaises(KeyDerivationError) as refused:
                    parse(text)
                self.assertEqual("ARGUMENTS_NOT_JSON", refused.exception.code)

    def test_refuses_nesting_deeper_than_python_recursion_too(self):
        with self.assertRaises(KeyDerivationError):
            parse("[" * 100000 + "]" * 100000)


class StepContextTest(unittest.TestCase):
    def test_tenant_run_and_step_must_be_set(self):
        for args in (("", "r", "s"), ("t", " ", "s"), ("t", "r", ""), (None, "r", "s")):
            with self.subTest(args):
                with self.assertRaises(ValueError):
                    StepContext(*args)

    def test_scope_defaults_to_none_and_must_be_text(self):
        self.assertEqual("", StepContext("t", "r", "s").scope)
        with self.assertRaises(ValueError):
            StepContext("t", "r", "s", None)

    def test_key_rules_are_json_pointers_and_not_both(self):
        with self.assertRaises(ValueError):
            KeyRules(ignore=["reason"])
        with self.assertRaises(ValueError):
            KeyRules(ignore=["/a"], require=["/a"])


if __name__ == "__main__":
    unittest.main()
