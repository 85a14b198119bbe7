# Dockerfile parsing shared by container-check.sh and container-smoke.sh (source it after setting DOCKERFILE).
#
#   parse_dockerfile FILE   # prints "STAGE<TAB>INSTRUCTION<TAB>ARGUMENTS" per logical instruction
#   json_words TEXT         # the strings of a JSON array (exec form), one per line

# Continuation lines are joined; comment lines (also inside a continuation) and blank lines are dropped.
parse_dockerfile() {
    awk '
    BEGIN { stage = -1; line = "" }
    /^[[:space:]]*#/ { next }
    {
        text = $0
        sub(/\r$/, "", text)
        if (line == "" && text ~ /^[[:space:]]*$/) next
        continued = (text ~ /\\[[:space:]]*$/)
        if (continued) sub(/\\[[:space:]]*$/, "", text)
        line = (line == "" ? text : line " " text)
        if (continued) next
        sub(/^[[:space:]]+/, "", line)
        n = index(line, " ")
        instruction = toupper(n ? substr(line, 1, n - 1) : line)
        arguments = n ? substr(line, n + 1) : ""
        sub(/^[[:space:]]+/, "", arguments)
        gsub(/[[:space:]]+/, " ", arguments)
        if (instruction == "FROM") stage++
        printf "%d\t%s\t%s\n", stage, instruction, arguments
        line = ""
    }' "$1"
}

# json_words TEXT: the strings of a JSON array (exec form), one per line, with \\ and \" unescaped.
json_words() {
    grep -o '"\([^"\\]\|\\.\)*"' <<<"$1" | sed -e 's/^"//' -e 's/"$//' -e 's/\\"/"/g' -e 's/\\\\/\\/g'
}
