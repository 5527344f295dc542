"""The JDK as the oracle: one `java Oracle.java` run (the source launcher: nothing compiled to disk)
answers a batch of questions, each a line of space-separated hex fields, with one line each:
"OK <hex of the UTF-8 answer>", "NOMATCH", or "ERR <exception class>: <message>".

- `name <der>`: new X500Principal(der).getName(), what Kafka's principal builder reads;
- `cert <der>`: the same through CertificateFactory, as a TLS peer's certificate;
- `host <text>`: InetAddress.getByName(text).getHostAddress(), the host text Kafka's ACLs compare;
- `regex <pattern> <replacement> <input>`: NOMATCH unless Pattern.matches(pattern, input), else
  input.replaceAll(pattern, replacement), as Kafka's SslPrincipalMapper rule applies it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""
import java.io.*;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.HexFormat;
import java.util.regex.Pattern;
import javax.security.auth.x500.X500Principal;

public class Oracle {
    static String text(String hex) {
        return new String(HexFormat.of().parseHex(hex), StandardCharsets.UTF_8);
    }

    static String answer(String[] ask) throws Exception {
        switch (ask[0]) {
            case "name":
                return new X500Principal(HexFormat.of().parseHex(ask[1])).getName();
            case "cert":
                CertificateFactory factory = CertificateFactory.getInstance("X.509");
                X509Certificate cert = (X509Certificate) factory.generateCertificate(
                    new ByteArrayInputStream(HexFormat.of().parseHex(ask[1])));
                return cert.getSubjectX500Principal().getName();
            case "host":
                return InetAddress.getByName(text(ask[1])).getHostAddress();
            case "regex":
                String pattern = text(ask[1]), input = ask.length > 3 ? text(ask[3]) : "";
                String replacement = ask.length > 2 ? text(ask[2]) : "";
                if (!Pattern.compile(pattern).matcher(input).matches()) return null;
                return input.replaceAll(pattern, replacement);
            default:
                throw new IllegalArgumentException(ask[0]);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null; ) {
            try {
                String found = answer(line.split(" ", -1));
                out.println(found == null ? "NOMATCH"
                    : "OK " + HexFormat.of().formatHex(found.getBytes(StandardCharsets.UTF_8)));
            } catch (Exception e) {
                out.println("ERR " + e.getClass().getName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' '));
            }
        }
        out.flush();
    }
}
"""


def hexed(text: str) -> str:
    return text.encode().hex()


def ask_java(questions: list[str], workdir: Path) -> list[str]:
    """The JDK's answers to `questions` (lines as the module describes), decoded: the answer's text,
    "NOMATCH", or "ERR ..."."""
    source = workdir / "Oracle.java"
    source.write_text(SOURCE)
    done = subprocess.run(
        ["java", "-Xshare:auto", "-XX:+UseSerialGC", str(source)],
        input="".join(question + "\n" for question in questions),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == len(questions), done.stderr
    return [bytes.fromhex(line[3:]).decode() if line.startswith("OK ") else line for line in lines]
