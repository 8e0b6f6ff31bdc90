import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;

/**
 * What a JDBC BI tool (DBeaver, Metabase, Tableau) asks first: the schemas, tables, columns,
 * keys, indexes and types of DatabaseMetaData (DBeaver reads the keys and indexes when a table
 * is opened). Prints each result set as tab-separated lines under a "== name"
 * header, for the test to compare. Usage: java CatalogProbe.java URL USER PASSWORD TABLE [SETUP...]
 * (the SETUP statements run first, on the same connection).
 */
public class CatalogProbe {
    static void print(String title, ResultSet rows, String... columns) throws SQLException {
        System.out.println("== " + title);
        while (rows.next()) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < columns.length; i++) {
                if (i > 0) line.append('\t');
                line.append(rows.getString(columns[i]));
            }
            System.out.println(line);
        }
        rows.close();
    }

    public static void main(String[] args) throws Exception {
        try (Connection con = DriverManager.getConnection(args[0], args[1], args[2])) {
            try (var setup = con.createStatement()) {
                for (int i = 4; i < args.length; i++) setup.execute(args[i]);
            }
            DatabaseMetaData meta = con.getMetaData();
            System.out.println("== product\n" + meta.getDatabaseProductName() + "\t"
                    + meta.getDatabaseMajorVersion());
            print("schemas", meta.getSchemas(), "TABLE_SCHEM");
            print("tables", meta.getTables(null, null, "%", new String[] {"TABLE", "VIEW"}),
                    "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE");
            print("columns", meta.getColumns(null, null, args[3], "%"),
                    "TABLE_NAME", "COLUMN_NAME", "TYPE_NAME", "DATA_TYPE", "ORDINAL_POSITION");
            print("primary keys", meta.getPrimaryKeys(null, null, args[3]),
                    "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME");
            print("index info", meta.getIndexInfo(null, null, args[3], false, false),
                    "TABLE_NAME", "INDEX_NAME", "NON_UNIQUE", "COLUMN_NAME", "ORDINAL_POSITION");
            print("types", meta.getTypeInfo(), "TYPE_NAME", "DATA_TYPE");
            print("catalogs", meta.getCatalogs(), "TABLE_CAT");
            try (var statement = con.prepareStatement("SELECT * FROM " + args[3] + " LIMIT ?")) {
                statement.setInt(1, 2);
                ResultSet rows = statement.executeQuery();
                ResultSetMetaData columns = rows.getMetaData();
                print("query", rows, columns.getColumnName(1), columns.getColumnName(2));
            }
        }
    }
}
