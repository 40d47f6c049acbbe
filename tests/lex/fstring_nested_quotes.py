# Python 3.12 (PEP 701): a field may reuse the enclosing quote and span lines.
same_quote = f"{d["key"]}"
nested_same = f"{f"{x}"}"
multi_line_field = f"""total: {
    a + b
}"""
spec_field = f"{value:{">" if right else "<"}10}"
