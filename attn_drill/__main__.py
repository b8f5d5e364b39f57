from attn_drill.cli import main

main()
