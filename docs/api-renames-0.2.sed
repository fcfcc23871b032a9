# memsnap API 0.1 -> 0.2: renamed public identifiers (docs/api.md). One s/// line per
# identifier, whole words only; safe on any .c/.h/.md file and idempotent:
#     sed -i -E -f api-renames.sed FILES
# The first line leaves alone the rows of docs/api.md's rename table ("| `old` | `new` |"),
# which must keep the old names.
/^\| `ms_\w+` \| `ms_\w+` \|/b
s/\bms_code_message\b/ms_code_text/g
s/\bms_wrap_evidence_key\b/ms_wrap_evidence_name/g
s/\bms_iter_method_key\b/ms_iter_method_name/g
s/\bms_leak_pattern_key\b/ms_leak_pattern_name/g
s/\bms_category_reason_key\b/ms_category_reason_name/g
s/\bms_leaks_find\b/ms_leak_report_build/g
s/\bms_oom_analyze\b/ms_oom_report_build/g
s/\bms_leaks_marks\b/ms_leak_marks_build/g
s/\bms_leak_marks_of\b/ms_leak_marks_from_report/g
