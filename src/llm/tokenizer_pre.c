/* BPE pre-tokenizers: llama.cpp's LLAMA_VOCAB_PRE_TYPE_* families by
 * tokenizer.ggml.pre name, and the split of a fragment into words.
 *
 * llama.cpp (llama-vocab.cpp) gives each family a list of regexes that
 * unicode_regex_split (unicode.cpp) applies in sequence, each one cutting
 * every word of the previous step further (a match and the gap before it
 * are both words). Each regex runs one of three ways there, and the same
 * three ways here, all through PCRE2:
 *   - custom: a few exact patterns (gpt2, llama3, qwen2, qwen35, the
 *     newline split, AFMoE digit groups) have hand-written splitters;
 *     here they are PCRE2 regexes in UTF/UCP mode whose classes are
 *     llama.cpp's (whitespace set, letters/numbers of Unicode 15), or
 *     a loop (digit groups);
 *   - collapsed: a regex using \p{N} \p{L} \p{P} \p{M} \p{S} (\p{Lu} &c.
 *     all mean "letter") runs as std::regex over a byte string in which
 *     every non-ASCII code point is one byte naming its category (0xD1
 *     number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0x0B
 *     whitespace, 0xD0 anything else) and the regex's \p{..} became that
 *     byte plus the ASCII members. Here: the same translation, the same
 *     bytes, PCRE2 without UTF;
 *   - wide: any other regex runs as std::wregex over the code points with
 *     non-ASCII whitespace replaced by U+000B; here PCRE2 in UTF mode
 *     without UCP (\s, \d, \w ASCII only, as std::wregex in the C locale).
 * std::regex is ECMAScript: "$" is the end of the word (PCRE2_DOLLAR_ENDONLY)
 * and after an empty match the next one is tried at the same place but not
 * empty, then one character on (std::regex_iterator). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_impl.h"

/* ------------------------------------------------------------------ */
/* llama.cpp's regex lists, verbatim (llm_tokenizer_bpe's constructor)  */

static const char *const k_llama3[] = {   /* LLAMA3 */
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_jais2[] = {   /* JAIS2 */
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
    NULL };
static const char *const k_deepseek_llm[] = {   /* DEEPSEEK_LLM */
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
    NULL };
static const char *const k_deepseek3_llm[] = {   /* DEEPSEEK3_LLM, HUNYUAN_DENSE, JOYAI_LLM, HY_V4 */
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_spark2_5[] = {   /* SPARK2_5 */
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}",
    NULL };
static const char *const k_youtu[] = {   /* YOUTU */
    "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_deepseek_coder[] = {   /* DEEPSEEK_CODER */
    "[\r\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}",
    NULL };
static const char *const k_falcon[] = {   /* FALCON */
    "[\\p{P}\\$\\+<=>\\^~\\|`]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "[0-9][0-9][0-9]",
    NULL };
static const char *const k_starcoder[] = {   /* STARCODER, REFACT, COMMAND_R, SMOLLM, CODESHELL, EXAONE, MINERVA, MELLUM2 */
    "\\p{N}",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL };
static const char *const k_gpt2[] = {   /* GPT2, MPT, OLMO, JAIS, TRILLION, GRANITE_DOCLING */
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL };
static const char *const k_stablelm2[] = {   /* STABLELM2, QWEN2, HUNYUAN, SOLAR_OPEN */
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_qwen35[] = {   /* QWEN35 */
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_poro[] = {   /* PORO, BLOOM, GPT3_FINNISH */
    " ?[^(\\s|.,!?…。，、।۔،)]+",
    NULL };
static const char *const k_viking[] = {   /* VIKING */
    " ?[^(\\s|.,!?…。，、।۔،)]+",
    "\\p{N}",
    NULL };
static const char *const k_tekken[] = {   /* TEKKEN */
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_chameleon[] = {   /* CHAMELEON */
    "<sentinel:[0-9]+>",
    "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    "([\\t\\n]|    |  )",
    "\\p{N}",
    "[\\p{P}!-/:-@\\[-`{-~]",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL };
static const char *const k_gpt4o[] = {   /* GPT4O, MINIMAX_M2 */
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_granite_emb_multi[] = {   /* GRANITE_EMB_MULTI */
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_tiny_aya[] = {   /* TINY_AYA */
    "\\d{1,3}(?=(?:\\d{3})*\\b)",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_superbpe[] = {   /* SUPERBPE */
    "\\p{N}+",
    "(?=(\\d{3})+(?!\\d))",
    NULL };
static const char *const k_bailingmoe[] = {   /* BAILINGMOE */
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_seed_coder[] = {   /* SEED_CODER */
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_ufakzeka[] = {   /* UFAKZEKA */
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_afmoe[] = {   /* AFMOE */
    "\\p{AFMoE_digits}",
    "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_laguna[] = {   /* LAGUNA */
    "[^\\n]+|[\\n]+",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_exaone_moe[] = {   /* EXAONE_MOE */
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL };
static const char *const k_minicpm5[] = {   /* MINICPM5 */
    "\\p{N}{1,3}",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL };
/* GEMMA4, SARVAM_MOE: SPM-style BPE over the whole line (spaces already "▁") */
static const char *const k_newlines[] = {   /* GEMMA4, SARVAM_MOE */
    "[^\\n]+|[\\n]+",
    NULL };
static const char *const k_whitespace[] = {   /* WHITESPACE */
    "\\S+",
    NULL };
/* the trigger of llama.cpp's custom K2 splitter (unicode_regex_split_custom_kimi_k2) */
static const char *const k_kimi_k2[] = {   /* KIMI_K2 */
    "\\p{Han}+",
    NULL };
static const char *const k_default[] = {   /* DEFAULT */
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "\\p{N}+",
    "[0-9][0-9][0-9]",
    NULL };

/* llama.cpp's "\\p{AFMoE_digits}" / tiny_aya digit groups: the custom
 * splitter of unicode_regex_split_custom_afmoe */
#define AFMOE_DIGITS "\\p{AFMoE_digits}"
#define TINY_AYA_DIGITS "\\d{1,3}(?=(?:\\d{3})*\\b)"

/* clean_spaces off, ignore_merges, add_bos, no default BOS; escape_whitespaces (' ' as "▁", undone when
 * decoding), raw UTF-8 (byte_encode off: no GPT-2 byte map, <0xXX> byte tokens), the GEMMA4 type (a newline
 * run that is a token stays whole; add_bos forced on), merges may be missing (kimi-k2), the normalizer's
 * lowercase off unless the GGUF says otherwise (whitespace) */
enum { NC = 1, IM = 2, AB = 4, NB = 8, ES = 16, RB = 32, G4 = 64, NM = 128, LO = 256 };
typedef struct { const char *name; const char *const *exprs; int flags; } npl_pre_name;

/* llama_vocab::impl::load's tokenizer.ggml.pre names, in its order */
static const npl_pre_name k_names[] = {
    { "default", k_default, 0 },
    { "minicpm5", k_minicpm5, IM },
    { "llama3", k_llama3, IM | AB }, { "llama-v3", k_llama3, IM | AB }, { "llama-bpe", k_llama3, IM | AB },
    { "falcon3", k_llama3, IM | AB }, { "falcon-h1", k_llama3, IM | AB }, { "pixtral", k_llama3, IM | AB },
    { "midm-2.0", k_llama3, IM | AB }, { "lfm2", k_llama3, IM | AB }, { "jina-v5-nano", k_llama3, IM | AB },
    { "deepseek-llm", k_deepseek_llm, NC }, { "deepseek-coder", k_deepseek_coder, NC },
    { "deepseek-v3", k_deepseek3_llm, NC }, { "spark2_5", k_spark2_5, NC }, { "youtu", k_youtu, NC | IM },
    { "falcon", k_falcon, 0 }, { "mpt", k_gpt2, 0 }, { "starcoder", k_starcoder, 0 },
    { "gpt-2", k_gpt2, 0 }, { "phi-2", k_gpt2, 0 }, { "jina-es", k_gpt2, 0 }, { "jina-de", k_gpt2, 0 },
    { "gigachat", k_gpt2, 0 }, { "jina-v2-es", k_gpt2, 0 }, { "jina-v2-de", k_gpt2, 0 }, { "a.x-4.0", k_gpt2, 0 },
    { "mellum", k_gpt2, 0 }, { "modern-bert", k_gpt2, 0 },
    { "jais-2", k_jais2, 0 },
    { "gemma4", k_newlines, ES | RB | G4 }, { "granite-embed-multi-311m", k_newlines, ES | RB | G4 },
    { "sarvam-moe", k_newlines, ES | RB | NC },
    { "jina-v1-en", k_gpt2, 0 }, { "jina-v2-code", k_gpt2, 0 }, { "roberta-bpe", k_gpt2, 0 },
    { "whitespace", k_whitespace, RB | LO },
    { "refact", k_starcoder, 0 }, { "command-r", k_starcoder, NC },
    { "qwen2", k_stablelm2, NC }, { "deepseek-r1-qwen", k_stablelm2, NC }, { "kormo", k_stablelm2, NC },
    { "f2llmv2", k_stablelm2, NC }, { "qwen35", k_qwen35, NC }, { "stablelm2", k_stablelm2, 0 },
    { "olmo", k_gpt2, 0 }, { "dbrx", k_llama3, 0 }, { "smaug-bpe", k_llama3, 0 }, { "poro-chat", k_poro, NC },
    { "chatglm-bpe", k_llama3, NB }, { "glm4", k_llama3, NB | IM }, { "glm5", k_llama3, NB | IM },
    { "viking", k_viking, NC }, { "jais", k_gpt2, 0 }, { "tekken", k_tekken, NC | IM | AB },
    { "smollm", k_starcoder, NC }, { "codeshell", k_starcoder, 0 }, { "bloom", k_poro, 0 },
    { "gpt3-finnish", k_poro, 0 }, { "exaone", k_starcoder, 0 }, { "exaone4", k_gpt2, 0 },
    { "exaone-moe", k_exaone_moe, 0 }, { "chameleon", k_chameleon, AB | NC }, { "minerva-7b", k_starcoder, 0 },
    { "megrez", k_stablelm2, 0 },
    { "gpt-4o", k_gpt4o, NC }, { "llama4", k_gpt4o, NC }, { "kanana2", k_gpt4o, NC }, { "talkie", k_gpt4o, NC },
    { "granite-embed-multi-97m", k_granite_emb_multi, NC | IM },
    { "tiny_aya", k_tiny_aya, NC }, { "cohere2moe", k_tiny_aya, NC }, { "superbpe", k_superbpe, NC },
    { "trillion", k_gpt2, NC }, { "granite-docling", k_gpt2, NC },
    { "bailingmoe", k_bailingmoe, NC }, { "bailingmoe2", k_bailingmoe, NC }, { "llada-moe", k_bailingmoe, NC },
    { "seed-coder", k_seed_coder, NC }, { "hunyuan", k_stablelm2, NC }, { "hunyuan-dense", k_deepseek3_llm, NC },
    { "hy_v4", k_deepseek3_llm, NC }, { "joyai-llm", k_deepseek3_llm, NC }, { "kimi-k2", k_kimi_k2, NC | NM },
    { "ufakzeka", k_ufakzeka, NC },
    { "grok-2", k_stablelm2, NC }, { "afmoe", k_afmoe, NC }, { "laguna", k_laguna, NC },
    { "minimax-m2", k_gpt4o, NC }, { "solar-open", k_stablelm2, NC }, { "mellum2", k_starcoder, 0 },
};

const char *const *npl_pre_find(const char *s, size_t n, int *flags) {
    for (size_t k = 0; k < sizeof(k_names) / sizeof(k_names[0]); k++)
        if (strlen(k_names[k].name) == n && memcmp(k_names[k].name, s, n) == 0) {
            *flags = k_names[k].flags;
            return k_names[k].exprs;
        }
    return NULL;
}

const char *const *npl_pre_default(void) { return k_default; }

int npl_pre_flag(int flags, int which) {
    switch (which) {
    case NPL_PRE_NO_CLEAN: return (flags & NC) != 0;
    case NPL_PRE_IGNORE_MERGES: return (flags & IM) != 0;
    case NPL_PRE_ADD_BOS: return (flags & AB) != 0;
    case NPL_PRE_NO_BOS: return (flags & NB) != 0;
    case NPL_PRE_ESCAPE_WS: return (flags & ES) != 0;
    case NPL_PRE_RAW_BYTES: return (flags & RB) != 0;
    case NPL_PRE_GEMMA4: return (flags & G4) != 0;
    case NPL_PRE_NO_MERGES_OK: return (flags & NM) != 0;
    case NPL_PRE_NO_LOWERCASE: return (flags & LO) != 0;
    default: return 0;
    }
}

/* One name per regex list (the first llama.cpp lists), so that the line
 * fits an error buffer: "default, minicpm5, llama3, ... (and N aliases)". */
void npl_pre_known_names(char *buf, size_t n) {
    const size_t count = sizeof(k_names) / sizeof(k_names[0]);
    size_t at = 0, shown = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < count; k++) {
        size_t j = 0;
        while (j < k && k_names[j].exprs != k_names[k].exprs) j++;
        if (j < k) continue;
        int w = snprintf(buf + at, n - at, "%s%s", at ? ", " : "", k_names[k].name);
        if (w < 0 || (size_t)w >= n - at) return;
        at += (size_t)w;
        shown++;
    }
    snprintf(buf + at, n - at, " and %zu aliases of these", count - shown);
}

/* ------------------------------------------------------------------ */
/* character classes                                                   */

/* llama.cpp's unicode_set_whitespace */
#define WS "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
/* Code points of Unicode 15.0/15.1 that llama.cpp's tables (unicode-data.cpp)
 * put in a category and PCRE2 10.42 (Unicode 14) leaves unassigned, found by
 * comparing both over U+0000..U+10FFFF; harmless with a newer PCRE2. */
#define L_NEW "\\x{1123F}-\\x{11240}\\x{11F02}\\x{11F04}-\\x{11F10}\\x{11F12}-\\x{11F33}\\x{1342F}\\x{13441}-\\x{13446}" \
              "\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{2B739}" \
              "\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}"
#define N_NEW "\\x{11F50}-\\x{11F59}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}"
#define M_NEW "\\x{CF3}\\x{ECE}\\x{10EFD}-\\x{10EFF}\\x{11241}\\x{11F00}-\\x{11F01}\\x{11F03}\\x{11F34}-\\x{11F3A}" \
              "\\x{11F3E}-\\x{11F42}\\x{13440}\\x{13447}-\\x{13455}\\x{1E08F}\\x{1E4EC}-\\x{1E4EF}"
#define P_NEW "\\x{11B00}-\\x{11B09}\\x{11F43}-\\x{11F4F}"
#define S_NEW "\\x{2FFC}-\\x{2FFF}\\x{31EF}\\x{1F6DC}\\x{1F774}-\\x{1F776}\\x{1F77B}-\\x{1F77F}\\x{1F7D9}" \
              "\\x{1FA75}-\\x{1FA77}\\x{1FA87}-\\x{1FA88}\\x{1FAAD}-\\x{1FAAF}\\x{1FABB}-\\x{1FABD}\\x{1FABF}" \
              "\\x{1FACE}-\\x{1FACF}\\x{1FADA}-\\x{1FADB}\\x{1FAE8}\\x{1FAF7}-\\x{1FAF8}"
#define PL "\\p{L}" L_NEW   /* inside a class */
#define PN "\\p{N}" N_NEW
#define PP "\\p{P}" P_NEW
#define PM "\\p{M}" M_NEW
#define PS "\\p{S}" S_NEW

/* The custom splitters (unicode_regex_split_custom), as PCRE2 regexes
 * over the text; "\s" spelled out as llama.cpp's whitespace set. */
static const char k_re_llama3[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n" PL PN "]?[" PL "]+|[" PN "]{1,3}"
    "| ?[^" WS PL PN "]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
static const char k_re_qwen2[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n" PL PN "]?[" PL "]+|[" PN "]"
    "| ?[^" WS PL PN "]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
/* qwen35: qwen2 whose letter runs also take combining marks */
static const char k_re_qwen35[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n" PL PN "]?[" PL PM "]+|[" PN "]"
    "| ?[^" WS PL PM PN "]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
static const char k_re_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?[" PL "]+| ?[" PN "]+| ?[^" WS PL PN "]+|[" WS "]+(?![^" WS "])";

static const struct { const char *llama, *pcre; } k_custom[] = {
    { "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", k_re_gpt2 },
    { "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", k_re_llama3 },
    { "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", k_re_llama3 },
    { "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", k_re_qwen2 },
    { "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", k_re_qwen35 },
    { "[^\\n]+|[\\n]+", "[^\\n]+|\\n+" },
};

/* One run of code points of one llama.cpp category per match: the group
 * that matched is the category (CAT_*). */
enum { CAT_W = 1, CAT_L, CAT_N, CAT_P, CAT_M, CAT_S, CAT_OTHER };
static const char k_re_classes[] =
    "([" WS "]+)|([" PL "]+)|([" PN "]+)|([" PP "]+)|([" PM "]+)|([" PS "]+)|([^" WS PL PN PP PM PS "]+)";
/* collapsed byte per category (k_ucat_cpt; whitespace 0x0B, other 0xD0) */
static const unsigned char k_collapsed[8] = { 0xD0, 0x0B, 0xD2, 0xD1, 0xD3, 0xD4, 0xD5, 0xD0 };

/* the \p{..} names unicode_regex_split collapses, and what each becomes */
static const struct { const char *name; unsigned char byte; const char *ascii; } k_ucat[] = {
    { "\\p{N}", 0xD1, "\x30-\x39" },
    { "\\p{L}", 0xD2, "\x41-\x5A\x61-\x7A" },
    { "\\p{P}", 0xD3, "\x21-\x23\x25-\x2A\x2C-\x2F\x3A-\x3B\x3F-\x40\\\x5B-\\\x5D\x5F\\\x7B\\\x7D" },
    { "\\p{M}", 0xD4, "" },
    { "\\p{S}", 0xD5, "\\\x24\\\x2B\x3C-\x3E\x5E\x60\\\x7C\\\x7E" },
    { "\\p{Lu}", 0xD2, "\x41-\x5A\x61-\x7A" },
    { "\\p{Ll}", 0xD2, "\x41-\x5A\x61-\x7A" },
    { "\\p{Lt}", 0xD2, "\x41-\x5A\x61-\x7A" },
    { "\\p{Lm}", 0xD2, "\x41-\x5A\x61-\x7A" },
    { "\\p{Lo}", 0xD2, "\x41-\x5A\x61-\x7A" },
};

static int uses_ucat(const char *e) {
    for (size_t k = 0; k < sizeof(k_ucat) / sizeof(k_ucat[0]); k++)
        if (strstr(e, k_ucat[k].name)) return 1;
    return 0;
}

/* unicode_regex_split's translation of a regex to the collapsed alphabet;
 * returns a malloc'd string or NULL (out of memory) */
static char *collapse_regex(const char *e) {
    size_t n = strlen(e);
    char *out = malloc(n * 24 + 1), *o = out;
    if (!out) return NULL;
    int inside = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i] == '[' && (i == 0 || e[i - 1] != '\\')) { *o++ = '['; inside = 1; continue; }
        if (inside && e[i] == ']' && e[i - 1] != '\\') { *o++ = ']'; inside = 0; continue; }
        if (e[i] == '\\' && i + 3 < n && e[i + 1] == 'p' && e[i + 2] == '{') {
            const char *close = strchr(e + i + 3, '}');
            if (close && (size_t)(close - e) <= i + 10) {
                size_t len = (size_t)(close - e) - i + 1;
                size_t k;
                for (k = 0; k < sizeof(k_ucat) / sizeof(k_ucat[0]); k++)
                    if (strlen(k_ucat[k].name) == len && memcmp(k_ucat[k].name, e + i, len) == 0) break;
                if (k < sizeof(k_ucat) / sizeof(k_ucat[0])) {
                    if (!inside) *o++ = '[';
                    *o++ = (char)k_ucat[k].byte;
                    size_t al = strlen(k_ucat[k].ascii);
                    memcpy(o, k_ucat[k].ascii, al);
                    o += al;
                    if (!inside) *o++ = ']';
                    i += len - 1;
                    continue;
                }
            }
        }
        *o++ = e[i];
    }
    *o = '\0';
    return out;
}

/* ------------------------------------------------------------------ */
/* compile                                                             */

static pcre2_code *compile(const char *re, uint32_t opts, char *msg, size_t msglen) {
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, opts, &ec, &eo, NULL);
    if (!code) {
        PCRE2_UCHAR buf[120];
        pcre2_get_error_message(ec, buf, sizeof(buf));
        npl_errf(msg, msglen, ec == PCRE2_ERROR_HEAP_FAILED ? NPL_ERR_MEMORY : NPL_ERR_RUNTIME,
                 "pre-tokenizer regex does not compile at %zu: %s", (size_t)eo, (const char *)buf);
        return NULL;
    }
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);   /* the interpreter is the fallback */
    return code;
}

int npl_pre_init(npl_tokenizer *t, char *msg, size_t msglen) {
    const char *const *exprs = t->pre_exprs;
    int n = 0;
    for (; exprs[n]; n++) {
        if (n == NPL_PRE_MAX_STEPS) return npl_errf(msg, msglen, NPL_ERR_RUNTIME, "too many pre-tokenizer regexes"), -1;
        const char *e = exprs[n];
        npl_pre_step *st = &t->pre_steps[n];
        t->n_pre_steps = n + 1;
        if (strcmp(e, "\\p{AFMoE_digits}") == 0 || strcmp(e, "\\d{1,3}(?=(?:\\d{3})*\\b)") == 0) {
            st->kind = NPL_PRE_STEP_DIGITS;
            t->pre_need_cat = 1;
            continue;
        }
        if (strcmp(e, "\\p{Han}+") == 0) {   /* not a regex PCRE2 could run: the K2 loop */
            st->kind = NPL_PRE_STEP_KIMI;
            t->pre_need_cat = 1;
            continue;
        }
        const char *custom = NULL;
        for (size_t k = 0; k < sizeof(k_custom) / sizeof(k_custom[0]); k++)
            if (strcmp(e, k_custom[k].llama) == 0) custom = k_custom[k].pcre;
        if (custom) {
            st->kind = NPL_PRE_STEP_UCP;
            st->code = compile(custom, PCRE2_UTF | PCRE2_UCP, msg, msglen);
            t->pre_need_ucp = 1;
        } else if (uses_ucat(e)) {
            char *c = collapse_regex(e);
            if (!c) return npl_err_memory(msg, msglen), -1;
            st->kind = NPL_PRE_STEP_COLLAPSED;
            st->code = compile(c, PCRE2_DOLLAR_ENDONLY, msg, msglen);
            free(c);
            t->pre_need_cat = 1;
        } else {
            st->kind = NPL_PRE_STEP_WIDE;
            st->code = compile(e, PCRE2_UTF | PCRE2_DOLLAR_ENDONLY, msg, msglen);
            t->pre_need_wide = 1;
        }
        if (!st->code) return -1;
    }
    if (t->pre_need_cat) {
        t->pre_classes = compile(k_re_classes, PCRE2_UTF | PCRE2_UCP, msg, msglen);
        if (!t->pre_classes) return -1;
    }
    /* A whitespace run is matched with backtracking over the whole run
     * ([\s]*[\r\n]+ first), linear but counted against PCRE2's default match
     * limit of 10M: lift the limits so a 16 MB run of spaces still splits.
     * The context is only read while matching, so threads share it. */
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (!mc) return npl_err_memory(msg, msglen), -1;
    pcre2_set_match_limit(mc, UINT32_MAX);
    pcre2_set_depth_limit(mc, UINT32_MAX);
    pcre2_set_heap_limit(mc, UINT32_MAX);
    t->re_ctx = mc;
    return 0;
}

void npl_pre_free(npl_tokenizer *t) {
    for (int i = 0; i < t->n_pre_steps; i++)
        if (t->pre_steps[i].code) pcre2_code_free((pcre2_code *)t->pre_steps[i].code);
    if (t->pre_classes) pcre2_code_free((pcre2_code *)t->pre_classes);
    if (t->re_ctx) pcre2_match_context_free((pcre2_match_context *)t->re_ctx);
    t->n_pre_steps = 0;
    t->pre_classes = NULL;
    t->re_ctx = NULL;
}

/* ------------------------------------------------------------------ */
/* split                                                               */

typedef struct { uint32_t *v; size_t n, cap; } lens;

static int push(lens *l, size_t x) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        uint32_t *nv = realloc(l->v, nc * sizeof(uint32_t));
        if (!nv) return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = (uint32_t)x;
    return 0;
}

/* llama.cpp's whitespace set above U+007F */
static int ws_high(uint32_t c) {
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* UTF-8 text for PCRE2 (wide: non-ASCII whitespace as U+000B) and the byte
 * offset of every code point (n + 1 entries). Surrogates and values past
 * U+10FFFF, which lenient decoding lets through, become U+FFFD. */
static int utf8_view(const uint32_t *cpt, size_t n, int wide, char **text, uint32_t **boff) {
    *text = malloc(n * 4 + 1);
    *boff = malloc((n + 1) * sizeof(uint32_t));
    if (!*text || !*boff) return -1;
    size_t b = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = cpt[i];
        if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff) c = 0xfffd;
        else if (wide && c > 0x7f && ws_high(c)) c = 0x0b;
        (*boff)[i] = (uint32_t)b;
        b += (size_t)npl_utf8_encode(c, *text + b);
    }
    (*boff)[n] = (uint32_t)b;
    return 0;
}

static int xmatch(const npl_tokenizer *t, const pcre2_code *code, const char *s, size_t n, size_t at, uint32_t opts,
                  pcre2_match_data *md) {
    int rc = pcre2_match(code, (PCRE2_SPTR)s, n, at, opts | PCRE2_NO_UTF_CHECK, md, (pcre2_match_context *)t->re_ctx);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)   /* JIT stack and the like: the interpreter */
        rc = pcre2_match(code, (PCRE2_SPTR)s, n, at, opts | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                         (pcre2_match_context *)t->re_ctx);
    return rc;
}

#define B(i) (boff ? (size_t)boff[i] : (size_t)(i))

/* One regex over every word of in: matches and the gaps between them. */
static int split_regex(const npl_tokenizer *t, const pcre2_code *code, const char *text, const uint32_t *boff,
                       const lens *in, lens *out, pcre2_match_data *md, npl_status *why) {
    size_t cp0 = 0;
    for (size_t w = 0; w < in->n; w++) {
        size_t L = in->v[w], base = B(cp0), sl = B(cp0 + L) - base;
        const char *s = text + base;
        size_t emitted = cp0, ci = cp0, at = 0;
        int after_empty = 0;
        for (;;) {
            int rc;
            if (after_empty) {
                if (at >= sl) break;
                rc = xmatch(t, code, s, sl, at, PCRE2_ANCHORED | PCRE2_NOTEMPTY_ATSTART, md);
                if (rc == PCRE2_ERROR_NOMATCH) {
                    at = B(ci + 1) - base;
                    rc = xmatch(t, code, s, sl, at, 0, md);
                }
            } else {
                rc = xmatch(t, code, s, sl, at, 0, md);
            }
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) { if (rc != PCRE2_ERROR_NOMEMORY) *why = NPL_ERR_RUNTIME; return -1; }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            while (B(ci) - base < ms) ci++;
            size_t ms_ci = ci;
            while (B(ci) - base < me) ci++;
            if (ms_ci > emitted && push(out, ms_ci - emitted)) return -1;
            if (ci > ms_ci && push(out, ci - ms_ci)) return -1;
            emitted = ci;
            at = me;
            after_empty = ms == me;
        }
        if (cp0 + L > emitted && push(out, cp0 + L - emitted)) return -1;
        cp0 += L;
    }
    return 0;
}

/* unicode_regex_split_custom_afmoe: a run of n digits gives n % 3 digits
 * (joined to whatever came before since the last cut), then groups of 3 */
static int split_digits(const uint8_t *cat, const lens *in, lens *out) {
    size_t a = 0;
    for (size_t w = 0; w < in->n; w++) {
        size_t b = a + in->v[w], prev = a;
        for (size_t pos = a; pos < b;) {
            if (cat[pos] != CAT_N) { pos++; continue; }
            size_t start = pos;
            while (pos < b && cat[pos] == CAT_N) pos++;
            size_t cur = start + (pos - start) % 3;
            if (cur > prev) { if (push(out, cur - prev)) return -1; prev = cur; }
            for (; cur < pos; cur += 3) { if (push(out, cur + 3 - prev)) return -1; prev = cur + 3; }
        }
        if (b > prev && push(out, b - prev)) return -1;
        a = b;
    }
    return 0;
}

/* llama.cpp's unicode_cpt_is_han */
static int is_han(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0x2CEB0 && c <= 0x2EBEF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* ASCII is enough: no other upper-case letter lowers to s t m d r e v l */
static uint32_t lower_ascii(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* unicode_regex_split_custom_kimi_k2, step for step (its quirks included):
 * Han runs, non-Han letter runs with one optional leading non-letter and an
 * optional contraction, digit triples, punctuation runs with trailing
 * newlines, then the whitespace rules of the gpt-4o regex. "Letter" is
 * \p{L} only, without the marks the original regex also names. */
static int split_kimi(const uint32_t *cpt, const uint8_t *cat, const lens *in, lens *out) {
    size_t a = 0;
    for (size_t w = 0; w < in->n; w++) {
        const size_t end = a + in->v[w];
        size_t prev = a;
#define K_IN(p) ((p) < end)
#define K_CPT(p) (K_IN(p) ? cpt[p] : 0xFFFFFFFFu)
#define K_IS(p, c) (K_IN(p) && cat[p] == (c))
#define K_ADD(e) do { if ((e) > prev && push(out, (e) - prev)) return -1; prev = (e); } while (0)
        for (size_t pos = a; pos < end;) {
            const uint32_t c = cpt[pos];
            if (is_han(c)) {
                while (is_han(K_CPT(pos))) pos++;
                K_ADD(pos);
                continue;
            }
            const int lead_ok = !(c == '\r' || c == '\n' || K_IS(pos, CAT_L) || K_IS(pos, CAT_N));
            if ((K_IS(pos, CAT_L) && !is_han(c)) || (lead_ok && K_IS(pos + 1, CAT_L) && !is_han(K_CPT(pos + 1)))) {
                int has_lead = 0, has_letters = 0;
                if (lead_ok) { has_lead = 1; pos++; }
                while (K_IS(pos, CAT_L) && !is_han(K_CPT(pos))) { has_letters = 1; pos++; }
                if (has_letters || (!has_lead && K_IS(pos, CAT_L) && !is_han(K_CPT(pos)))) {
                    if (!has_letters) pos++;
                    while (K_IS(pos, CAT_L) && !is_han(K_CPT(pos))) pos++;
                    if (K_CPT(pos) == '\'' && pos + 1 < end) {
                        uint32_t n1 = lower_ascii(K_CPT(pos + 1));
                        if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                            pos += 2;
                        } else if (pos + 2 < end) {
                            uint32_t n2 = lower_ascii(K_CPT(pos + 2));
                            if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) pos += 3;
                        }
                    }
                    K_ADD(pos);
                    continue;
                } else if (has_lead) {
                    pos--;
                }
            }
            if (K_IS(pos, CAT_N)) {   /* \p{N}{1,3} */
                size_t ini = pos;
                while (K_IS(pos, CAT_N))
                    if (++pos - ini >= 3) { K_ADD(pos); ini = pos; }
                K_ADD(pos);
                continue;
            }
            /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
            size_t q = c == ' ' ? pos + 1 : pos;
            if (K_IN(q) && cat[q] != CAT_W && cat[q] != CAT_L && cat[q] != CAT_N) {
                pos = q;
                while (K_IN(pos) && cat[pos] != CAT_W && cat[pos] != CAT_L && cat[pos] != CAT_N) pos++;
                while (K_CPT(pos) == '\r' || K_CPT(pos) == '\n') pos++;
                K_ADD(pos);
                continue;
            }
            size_t nws = 0, last_nl = 0;
            while (K_IS(pos + nws, CAT_W)) {
                uint32_t c2 = cpt[pos + nws];
                if (c2 == '\r' || c2 == '\n') last_nl = pos + nws + 1;
                nws++;
            }
            if (last_nl > 0) { pos = last_nl; K_ADD(pos); continue; }        /* \s*[\r\n]+ */
            if (nws > 1 && K_IN(pos + nws)) { pos += nws - 1; K_ADD(pos); continue; }   /* \s+(?!\S) */
            if (nws > 0) { pos += nws; K_ADD(pos); continue; }             /* \s+ */
            pos++;
            K_ADD(pos);
        }
        K_ADD(end);   /* nothing is left over: every branch above cut at pos */
#undef K_IN
#undef K_CPT
#undef K_IS
#undef K_ADD
        a = end;
    }
    return 0;
}

int npl_pre_split(const npl_tokenizer *t, const uint32_t *cpt, size_t n, uint32_t **words, size_t *n_words) {
    lens cur = { NULL, 0, 0 }, next = { NULL, 0, 0 };
    char *ucp = NULL, *wide = NULL;
    uint32_t *ucp_off = NULL, *wide_off = NULL;
    uint8_t *cat = NULL;
    char *coll = NULL;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    npl_status why = NPL_ERR_MEMORY;
    int rc = -1;
    *words = NULL;
    *n_words = 0;
    if (!md) goto done;
    if (n == 0) { rc = 0; goto done; }
    if (push(&cur, n)) goto done;
    if ((t->pre_need_ucp || t->pre_need_cat) && utf8_view(cpt, n, 0, &ucp, &ucp_off)) goto done;
    if (t->pre_need_wide && utf8_view(cpt, n, 1, &wide, &wide_off)) goto done;
    if (t->pre_need_cat) {
        /* category of every code point, then the collapsed text */
        cat = malloc(n);
        coll = malloc(n);
        if (!cat || !coll) goto done;
        pcre2_match_data *cm = pcre2_match_data_create(8, NULL);
        if (!cm) goto done;
        size_t ci = 0, at = 0, sl = ucp_off[n];
        while (at < sl) {
            int r = xmatch(t, (const pcre2_code *)t->pre_classes, ucp, sl, at, 0, cm);
            if (r < 2) { pcre2_match_data_free(cm); if (r != PCRE2_ERROR_NOMEMORY) why = NPL_ERR_RUNTIME; goto done; }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(cm);
            for (; ci < n && ucp_off[ci] < ov[1]; ci++) {
                uint32_t c = cpt[ci];
                cat[ci] = (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff ? CAT_OTHER : (uint8_t)(r - 1);
                coll[ci] = c < 0x80 ? (char)c : (char)k_collapsed[cat[ci]];
            }
            at = ov[1];
        }
        pcre2_match_data_free(cm);
    }
    for (int s = 0; s < t->n_pre_steps; s++) {
        const npl_pre_step *st = &t->pre_steps[s];
        next.n = 0;
        int r;
        switch (st->kind) {
        case NPL_PRE_STEP_DIGITS: r = split_digits(cat, &cur, &next); break;
        case NPL_PRE_STEP_KIMI: r = split_kimi(cpt, cat, &cur, &next); break;
        case NPL_PRE_STEP_UCP: r = split_regex(t, st->code, ucp, ucp_off, &cur, &next, md, &why); break;
        case NPL_PRE_STEP_COLLAPSED: r = split_regex(t, st->code, coll, NULL, &cur, &next, md, &why); break;
        default: r = split_regex(t, st->code, wide, wide_off, &cur, &next, md, &why); break;
        }
        if (r) goto done;
        lens tmp = cur; cur = next; next = tmp;
    }
    *words = cur.v;
    *n_words = cur.n;
    cur.v = NULL;
    rc = 0;
done:
    if (rc) npl_status_note(why);
    free(cur.v);
    free(next.v);
    free(ucp); free(ucp_off); free(wide); free(wide_off); free(cat); free(coll);
    if (md) pcre2_match_data_free(md);
    return rc;
}
