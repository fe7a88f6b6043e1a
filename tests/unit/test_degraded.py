"""The script a question is mostly written in (pipeline/degraded.py): what decides whether
the built-in English model is said to miss it."""

import pytest
from codesift_db.pipeline.degraded import main_script, script_detail


@pytest.mark.parametrize(
    ("question", "script"),
    [
        ("购物车的折扣是怎么计算的？", "CJK (Chinese, Japanese, Korean) characters"),
        ("Как применяется скидка к корзине?", "Cyrillic"),
        ("كيف يتم تطبيق الخصم على السلة؟", "Arabic"),
        ("discount 在购物车里是怎么计算总价的", "CJK (Chinese, Japanese, Korean) characters"),
    ],
)
def test_a_question_mostly_in_another_script_is_named(question, script):
    assert main_script(question) == script
    detail = script_detail(question)
    assert detail is not None and "reads English" in detail and script in detail


@pytest.mark.parametrize(
    "question",
    [
        "how is the discount applied to the cart total?",
        "où est appliquée la réduction du panier ?",  # Latin with accents
        "apply_discount_to_cart_total 折扣",  # mostly Latin letters
        "1234 + 5678 = ?",  # no letters at all
        "",
    ],
)
def test_a_question_mostly_in_latin_script_is_not(question):
    assert main_script(question) is None
    assert script_detail(question) is None
