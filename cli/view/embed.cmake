# Turns the page's script and style sheet into C arrays at build time, so the memsnap
# binary carries them and the page needs no file beside it. Run by CMake with
# -DOUT=file.c -DJS=view.js -DCSS=view.css.
function(embed var path out)
  file(READ ${path} hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR n "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
  file(APPEND ${out} "const unsigned char ${var}[] = {\n${body}0x00};\nconst unsigned long ${var}_len = ${n};\n")
endfunction()
file(WRITE ${OUT} "/* Generated from cli/view/ by cli/view/embed.cmake; do not edit. */\n")
embed(view_js ${JS} ${OUT})
embed(view_css ${CSS} ${OUT})
